package analyzer

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

// largeRun is a run of 200 failed tests (the corpus's failures again and again, each with its
// own numbers, ids and a Java-sized stack) and a 32 MiB log.
func largeRun(tb testing.TB) Input {
	tb.Helper()
	var templates []Test
	for _, c := range loadCorpus(tb) {
		for _, t := range c.Tests {
			if t.Status == domain.TestFailed {
				templates = append(templates, t)
			}
		}
	}
	frames := strings.Repeat("\tat org.junit.platform.engine.support.hierarchical.NodeTestTask.executeRecursively(NodeTestTask.java:151)\n", 30)
	in := Input{TaskID: "nightly-2025-03-14", BaseURL: "http://web:3000", ExitCode: exitCode(1)}
	for i := range 200 {
		t := templates[i%len(templates)]
		t.Name = fmt.Sprintf("%s #%d", t.Name, i)
		t.Error = strings.ReplaceAll(t.Error, "0", fmt.Sprint(i%10))
		t.Stack += fmt.Sprintf("\n\tat com.acme.generated.Case%d.run(Case%d.java:%d)\n", i, i, 10+i) + frames
		in.Tests = append(in.Tests, t)
	}
	for i := range 300 {
		in.Tests = append(in.Tests, Test{TestResult: domain.TestResult{Name: fmt.Sprintf("passing %d", i), Status: domain.TestPassed}})
	}
	var log strings.Builder
	log.Grow(32 << 20)
	for i := 0; log.Len() < 32<<20; i++ {
		fmt.Fprintf(&log, "2025-03-14T02:%02d:%02d.%03dZ INFO  [worker-%d] GET /api/products?page=%d 200 %dms\n", i/60%60, i%60, i%1000, i%4, i%50, i%300)
		if i%5000 == 0 {
			fmt.Fprintf(&log, "  %d) [chromium] › checkout.spec.ts:%d › checkout › pays\n    Error: expect(received).toBe(expected)\n", i, i%90)
		}
	}
	in.Log = log.String()
	return in
}

// largeHistory has every signature of the run seen before and 500 triages, none exact: each
// is compared by words with every failure.
func largeHistory(in Input) (History, []Triage) {
	h := History{Signatures: map[string]SignatureHistory{}, Tests: map[string][]domain.TestStatus{}}
	for _, s := range Signatures(in) {
		h.Signatures[s] = SignatureHistory{Occurrences: 40, FirstSeenTaskID: "nightly-2025-01-02"}
	}
	for _, k := range TestKeys(in) {
		h.Tests[k] = []domain.TestStatus{"passed", "passed", "failed", "passed", "passed"}
	}
	var triages []Triage
	for i := range 500 {
		t := in.Tests[i%200]
		n := Normalize(t.Error+fmt.Sprintf("\nseen in build%c%c", 'a'+i%26, 'a'+i/26), t.Stack)
		triages = append(triages, Triage{Signature: signatureOf(n), Normalized: n, Category: ai.TestBug, By: "ada@example.com", TaskID: "nightly-2025-02-01", At: time.Date(2025, 2, 1, 0, 0, 0, i, time.UTC)})
	}
	return h, triages
}

// The cost bounds of one analysis of largeRun.
const (
	maxAnalyseTime  = time.Second
	maxAnalyseBytes = 50 << 20
)

func BenchmarkAnalyseLarge(b *testing.B) {
	in := largeRun(b)
	h, triages := largeHistory(in)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		Analyse(in, h, triages)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/1e6, "MB/op")
}

// TestAnalyseLargeIsCheap keeps the benchmark's bounds: a 200-failure run with a 32 MiB log
// is analysed in well under a second and 50 MB.
func TestAnalyseLargeIsCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("a time and memory bound on a 32 MiB log: the full tier (go test without -short) runs it")
	}
	in := largeRun(t)
	h, triages := largeHistory(in)
	Analyse(in, h, triages) // warm up: regexps, maps
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	res := Analyse(in, h, triages)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("200 failures, 32 MiB log: %v, %.1f MB allocated", elapsed, float64(allocated)/1e6)
	if elapsed > maxAnalyseTime || allocated > maxAnalyseBytes {
		t.Errorf("analysis took %v and %d bytes; bounds %v and %d", elapsed, allocated, maxAnalyseTime, maxAnalyseBytes)
	}
	if len(res.Failures) != 200 || res.Failures[0].Occurrences < 41 || res.Category == ai.Unknown {
		t.Errorf("finding %+v with %d failures", res.Finding, len(res.Failures))
	}
}
