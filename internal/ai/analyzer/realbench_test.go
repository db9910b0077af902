package analyzer

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
)

// largeRealRun is a run of 200 failed tests made of the corpus of real failures' messages and
// stacks (JVM, Go, .NET, JavaScript, Python), 300 passing tests, and a 32 MiB log whose tail
// holds the retry marks of several runners (the passing tests were rerun), so that every
// reading of the analyser is paid for.
func largeRealRun(tb testing.TB) Input {
	tb.Helper()
	var templates []Test
	for _, c := range loadRealCorpus(tb) {
		for _, t := range c.Tests {
			if t.Status == domain.TestFailed && t.Error != "" {
				templates = append(templates, t)
			}
		}
	}
	in := Input{TaskID: "nightly-2026-11-28", BaseURL: "http://web:3000", ExitCode: exitCode(1)}
	for i := range 200 {
		t := templates[i*7%len(templates)]
		t.Name = fmt.Sprintf("%s #%d", t.Name, i)
		t.Error = strings.ReplaceAll(t.Error, "1", fmt.Sprint(i%10))
		in.Tests = append(in.Tests, t)
	}
	for i := range 300 {
		in.Tests = append(in.Tests, Test{TestResult: domain.TestResult{Suite: "tests/test_more.py", Name: fmt.Sprintf("test_passing_%d", i), Status: domain.TestPassed}})
	}
	var log strings.Builder
	log.Grow(32<<20 + 1<<20)
	for i := 0; log.Len() < 32<<20; i++ {
		fmt.Fprintf(&log, "2026-11-28T02:%02d:%02d.%03dZ INFO  [worker-%d] GET /api/products?page=%d 200 %dms\n", i/60%60, i%60, i%1000, i%4, i%50, i%300)
	}
	for i := range 300 {
		fmt.Fprintf(&log, "tests/test_more.py::test_passing_%d RERUN\n    (Attempt 1 of 3) step %d\n=== RERUN  TestStep%d\n", i, i, i)
	}
	in.Log = log.String()
	return in
}

// BenchmarkAnalyseLargeReal: the analysis of largeRealRun with every signature seen before and
// 500 triages; prints ms/op and MB/op.
func BenchmarkAnalyseLargeReal(b *testing.B) {
	in := largeRealRun(b)
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

// TestAnalyseLargeRealIsCheap keeps the bounds on real failures too: 200 of them and a 32 MiB
// log (with runners' retry marks) in under a second and 50 MB.
func TestAnalyseLargeRealIsCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("a time and memory bound on a 32 MiB log: the full tier (go test without -short) runs it")
	}
	in := largeRealRun(t)
	h, triages := largeHistory(in)
	Analyse(in, h, triages)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	res := Analyse(in, h, triages)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("200 real failures, 32 MiB log: %v, %.1f MB allocated", elapsed, float64(allocated)/1e6)
	if elapsed > maxAnalyseTime || allocated > maxAnalyseBytes {
		t.Errorf("analysis took %v and %d bytes; bounds %v and %d", elapsed, allocated, maxAnalyseTime, maxAnalyseBytes)
	}
	// The log's RERUN marks make the 300 passing tests ones that passed on a rerun.
	if len(res.Failures) != 500 || res.OmittedFailures != 0 {
		t.Errorf("%d failures (%d omitted), want the 200 failed and the 300 rerun", len(res.Failures), res.OmittedFailures)
	}
}
