package analyzer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestLogExcerptReadsOnlyTheTail(t *testing.T) {
	head := "Error: an early error that is too far back\n"
	var b strings.Builder
	b.WriteString(head)
	for b.Len() < 32<<20 {
		b.WriteString("INFO  GET /api/products 200 12ms\n")
	}
	b.WriteString("  1) checkout › pays\n    Error: connect ECONNREFUSED 127.0.0.1:3000\n      at TCPConnectWrap.afterConnect\n")
	b.WriteString("  48 passed, 1 failed\n")
	got := LogExcerpt(b.String())
	if strings.Contains(got, "early error") {
		t.Error("the excerpt read past the log's tail")
	}
	if !strings.Contains(got, "ECONNREFUSED") || !strings.Contains(got, "checkout › pays") || !strings.Contains(got, "48 passed") {
		t.Errorf("the excerpt misses the error and its context:\n%s", got)
	}
	if len(got) > MaxLogExcerptBytes {
		t.Errorf("excerpt of %d bytes", len(got))
	}
}

func TestLogExcerptKeepsTheLastErrorsAndMarksGaps(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "step %d ok\n", i)
		if i%10 == 0 {
			fmt.Fprintf(&b, "ERROR step %d failed: %s\n", i, strings.Repeat("x", 200))
		}
	}
	got := LogExcerpt(b.String())
	if len(got) > MaxLogExcerptBytes || !strings.Contains(got, "ERROR step 1990 failed") || strings.Contains(got, "ERROR step 10 failed") {
		t.Errorf("excerpt of %d bytes should keep the last errors:\n%.300s…", len(got), got)
	}
	if !strings.Contains(got, "\n…\n") {
		t.Error("left-out lines are not marked")
	}
	if got := LogExcerpt("a\nb\nc\n"); got != "a\nb\nc" {
		t.Errorf("a log without errors gives its last lines: %q", got)
	}
	if got := LogExcerpt(strings.Repeat("é", 40_000) + "\nerror: " + strings.Repeat("ü", 2000)); !strings.HasSuffix(got, "…") || !strings.Contains(got, "error: ") {
		t.Errorf("a long line is cut with a mark: %.80q", got)
	}
}

func TestEvidenceIsBoundedAndListsDistinctFailuresFirst(t *testing.T) {
	in := largeRun(t)
	res := Analyse(in, History{}, nil)
	ev := res.Evidence
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 64<<10 {
		t.Errorf("evidence of %d bytes of JSON", len(data))
	}
	if len(ev.Failures) != MaxEvidenceFailures || ev.OmittedFailures != len(res.Failures)-MaxEvidenceFailures {
		t.Errorf("%d failures listed, %d omitted", len(ev.Failures), ev.OmittedFailures)
	}
	seen := map[string]bool{}
	for _, f := range ev.Failures {
		if seen[f.Signature] {
			t.Errorf("signature %s listed twice while others are left out", f.Signature)
		}
		seen[f.Signature] = true
		if len(f.Message) > maxEvidenceMessage || len(f.Stack) > maxEvidenceStack || f.SameInRun < 1 || f.Reason.Rule == "" {
			t.Errorf("failure %q: message %d bytes, stack %d bytes, %+v", f.Test, len(f.Message), len(f.Stack), f.Reason)
		}
	}
	if ev.Builtin != res.Finding || ev.TaskID != in.TaskID || ev.Tests.Failed != 200 || ev.LogExcerpt == "" {
		t.Errorf("evidence %+v", ev)
	}
}
