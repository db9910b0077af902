package report

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseDir parses a run of 1,000 tests reported twice, as JUnit (50 files of 20
// tests, 5% failing with a stack trace) and as Allure results (one file per attempt, 10% of
// tests retried once), beside an HTML report folder that is walked but not read.
func BenchmarkParseDir(b *testing.B) {
	dir := b.TempDir()
	files := map[string][]byte{}
	trace := strings.Repeat("\tat com.acme.shop.CheckoutIT.step(CheckoutIT.java:42)\n", 30)
	for f := range 50 {
		var x strings.Builder
		fmt.Fprintf(&x, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<testsuite name="com.acme.shop.Suite%02dIT" tests="20" time="12.5">`, f)
		for i := range 20 {
			fmt.Fprintf(&x, `<testcase name="scenario%03d" classname="com.acme.shop.Suite%02dIT" time="0.%03d">`, i, f, i*37%1000)
			if (f*20+i)%20 == 7 {
				fmt.Fprintf(&x, `<failure message="expected: &lt;200&gt; but was: &lt;500&gt;" type="org.opentest4j.AssertionFailedError"><![CDATA[%s]]></failure>`, trace)
			}
			x.WriteString("<system-out><![CDATA[INFO request served\n]]></system-out></testcase>")
		}
		x.WriteString("</testsuite>")
		files[fmt.Sprintf("target/surefire-reports/TEST-com.acme.shop.Suite%02dIT.xml", f)] = []byte(x.String())
	}
	for i := range 1000 {
		attempts := []string{"passed"}
		if i%10 == 3 {
			attempts = []string{"failed", "passed"}
		}
		for a, status := range attempts {
			files[fmt.Sprintf("allure-results/%08x-0000-4000-8000-%012x-result.json", i, a)] = allureResultJSON(
				fmt.Sprintf("%08x-%d", i, a), fmt.Sprintf("hist-%d", i), fmt.Sprintf("case-%d", i), status,
				int64(1_700_000_000_000+i*1000+a*500), int64(1_700_000_000_000+i*1000+a*500+320), "")
		}
	}
	for i := range 200 {
		files[fmt.Sprintf("allure-report/data/attachments/%d.png", i)] = make([]byte, 2048)
	}
	writeTree(b, dir, files)
	b.ReportAllocs()
	for b.Loop() {
		got, err := ParseDir(dir)
		if err != nil || len(got) != 1000 {
			b.Fatalf("%d results, %v", len(got), err)
		}
	}
}

// BenchmarkPut extracts a 20 MB report archive: a Playwright HTML report's shape, with a few
// large videos and traces and many small screenshots.
func BenchmarkPut(b *testing.B) {
	entries := []entry{{name: "playwright-report/", typ: tar.TypeDir}, {name: "playwright-report/index.html", body: strings.Repeat("<div>", 100_000)}}
	size := int64(len(entries[1].body))
	for i := 0; size < 20<<20; i++ {
		body := strings.Repeat("x", 40<<10)
		name := fmt.Sprintf("playwright-report/data/%040x.png", i)
		if i%50 == 0 {
			body, name = strings.Repeat("v", 2<<20), fmt.Sprintf("playwright-report/data/%040x.webm", i)
		}
		entries = append(entries, entry{name: name, body: body})
		size += int64(len(body))
	}
	archive := tarOf(b, entries...)
	s, _ := newStore(b)
	ctx := context.Background()
	b.SetBytes(size)
	for i := 0; b.Loop(); i++ {
		taskID := fmt.Sprintf("bench-%d", i)
		if _, err := s.Put(ctx, org, taskID, bytes.NewReader(archive), "playwright-report", 1<<30); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := s.Delete(ctx, org, taskID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
