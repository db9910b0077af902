//go:build integration

package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// pyImage is Debian with python3, for runs given a `command`.
const pyImage = "verdict-examples/pytest:latest"

// TestRunLogPaging reads a 2.6 MiB log whole (streamed) and page by page with ?since=: the
// pages join into the log, none passes 1 MiB or cuts a character, and complete is true only
// once the run has ended and the log has been read to its end.
func TestRunLogPaging(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin := h.signup("logs@example.com", "Log Co")
			a := bearer(admin.token)
			// 98-byte lines of "✓" (3 bytes each), so the first page's 1 MiB end falls inside
			// a character; then a pause, to see a running run's page; then text JSON escapes.
			const lines = 27000
			task := h.queue(a, map[string]any{"image": pyImage, "command": `python3 -c 'import sys, time; w = sys.stdout.write; ` +
				`[w("%06d " % i + "\u2713" * 30 + "\n") for i in range(27000)]; sys.stdout.flush(); time.sleep(2); ` +
				`w("<b>&\"q\" \\ \t \u00e9 \U0001F600 \x01 end\n")'`})
			var want strings.Builder
			for i := range lines {
				fmt.Fprintf(&want, "%06d %s\n", i, strings.Repeat("✓", 30))
			}
			want.WriteString("<b>&\"q\" \\ \t é 😀 \x01 end\n")

			// Until the run has ended, a page is never complete: queued, then (most likely, in
			// the pause) running with part of its log.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				p := h.do("GET", "/api/executions/"+task+"/logs?since=0", a, nil)
				expect(t, p, 200, "")
				if p.get("data", "complete") == true && !final(h.do("GET", "/api/executions/"+task, a, nil)) {
					t.Fatalf("a page of a run still going is complete: %.200s", p.raw)
				}
				if p.str("data", "log") != "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no log while the run went on: %s", h.do("GET", "/api/executions/"+task, a, nil).raw)
				}
			}
			r := h.waitFor(a, task, 60*time.Second, final)
			if r.str("execution", "status") != "PASSED" {
				t.Fatalf("run: %s", r.raw)
			}

			whole := h.do("GET", "/api/executions/"+task+"/logs", a, nil)
			expect(t, whole, 200, "")
			if whole.str("taskId") != task || whole.str("status") != "PASSED" || len(whole.body) != 4 {
				t.Fatalf("whole log's envelope: %v", whole.body["status"])
			}
			if got := whole.str("logs"); got != want.String() {
				t.Fatalf("whole log: %d bytes, want %d; ends %q", len(got), want.Len(), got[max(0, len(got)-80):])
			}
			if !strings.HasPrefix(whole.header.Get("Content-Type"), "application/json") {
				t.Fatalf("Content-Type %q", whole.header.Get("Content-Type"))
			}

			var joined strings.Builder
			since, pages := 0, 0
			for {
				p := h.do("GET", fmt.Sprintf("/api/executions/%s/logs?since=%d", task, since), a, nil)
				expect(t, p, 200, "")
				pages++
				log, next, complete := p.str("data", "log"), p.get("data", "next"), p.get("data", "complete")
				if len(log) > 1<<20 || !utf8.ValidString(log) || strings.ContainsRune(log, utf8.RuneError) {
					t.Fatalf("page from %d: %d bytes, valid UTF-8 %v", since, len(log), utf8.ValidString(log))
				}
				if next != float64(since+len(log)) {
					t.Fatalf("page from %d of %d bytes: next %v", since, len(log), next)
				}
				joined.WriteString(log)
				since += len(log)
				if complete == true {
					break
				}
				if pages > 10 {
					t.Fatal("paging does not end")
				}
			}
			if joined.String() != want.String() || pages != 3 {
				t.Fatalf("pages (%d) join into %d bytes, want %d", pages, joined.Len(), want.Len())
			}
			if first := h.do("GET", "/api/executions/"+task+"/logs?since=0", a, nil); first.get("data", "next") != float64(1<<20-1) {
				t.Fatalf("the first page should end before the character at 1 MiB: next %v", first.get("data", "next"))
			}
			end := h.do("GET", fmt.Sprintf("/api/executions/%s/logs?since=%d", task, since+1000), a, nil)
			if end.str("data", "log") != "" || end.get("data", "next") != float64(since+1000) || end.get("data", "complete") != true {
				t.Fatalf("past the end: %s", end.raw)
			}
			for _, bad := range []string{"abc", "-1", "1.5", "", "+5", "1e3", "0&since=1"} {
				expect(t, h.do("GET", "/api/executions/"+task+"/logs?since="+bad, a, nil), 400, "Validation error")
			}
			other := h.signup("other@example.com", "Other Co")
			expect(t, h.do("GET", "/api/executions/"+task+"/logs?since=0", bearer(other.token), nil), 404, "Execution not found")
		})
	}
}
