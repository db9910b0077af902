package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// encoded is t's JSON as the store writes it: without HTML escaping.
func encoded(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func TestTestJSONSize(t *testing.T) {
	pieces := []string{"", "a", "<b>&", `"`, `\`, "\n", "\t", "\b", "\f", "\x01", "\x1f", "\x7f", "é", "€", "𝄞",
		"\u2028", "\u2029", "\xff", "\xe2\x82", "plain words "}
	rng := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	statuses := []TestStatus{TestPassed, TestFailed, TestSkipped, TestFlaky}
	for i := range 5000 {
		tr := TestResult{Name: text(), Suite: text(), Status: statuses[i%4], DurationMs: rng.Int64N(1 << 40), Retries: rng.IntN(1000)}
		if i%3 == 0 {
			tr.Error = text()
		}
		if i%7 == 0 {
			tr.DurationMs = -tr.DurationMs
		}
		if i%5 == 0 {
			tr.Shard = rng.IntN(100) - 10
		}
		for range rng.IntN(4) * (i % 2) {
			tr.Attachments = append(tr.Attachments, Attachment{Name: text(), ContentType: text(), Path: text(), Retry: rng.IntN(12) - 1})
		}
		if got, want := tr.JSONSize(), len(encoded(t, tr)); got != want {
			t.Fatalf("JSONSize of %+v = %d, the encoder writes %d bytes: %s", tr, got, want, encoded(t, tr))
		}
	}
}

func TestPickTests(t *testing.T) {
	var tests []TestResult
	for i := range 40 {
		st := []TestStatus{TestPassed, TestSkipped, TestFlaky, TestFailed}[i%4]
		tests = append(tests, TestResult{Name: fmt.Sprintf("t%02d", i), Status: st})
	}
	if got := PickTests(tests, 100, 1<<20); len(got) != 40 || &got[0] != &tests[0] {
		t.Fatalf("everything fits: %d tests, want the list itself", len(got))
	}
	names := func(ts []TestResult) string {
		var n []string
		for _, t := range ts {
			n = append(n, t.Name+":"+string(t.Status))
		}
		return strings.Join(n, " ")
	}
	// By count: the 10 failed, then 2 flaky (the first ones), in report order.
	got := PickTests(tests, 12, 1<<20)
	want := []TestResult{}
	flaky := 0
	for _, tr := range tests {
		if tr.Status == TestFailed || (tr.Status == TestFlaky && flaky < 2) {
			if tr.Status == TestFlaky {
				flaky++
			}
			want = append(want, tr)
		}
	}
	if !slices.EqualFunc(got, want, sameTest) {
		t.Fatalf("12 of them:\n got %s\nwant %s", names(got), names(want))
	}
	// By bytes: exactly as many as the encoded list holds within the budget.
	budget := len(encoded(t, want))
	if got := PickTests(tests, 100, budget); !slices.EqualFunc(got, want, sameTest) {
		t.Fatalf("by a budget of %d bytes:\n got %s\nwant %s", budget, names(got), names(want))
	}
	if got := PickTests(tests, 100, budget-1); len(got) != 11 {
		t.Fatalf("a byte short: %d tests, want 11", len(got))
	}
	// A big failure that does not fit ends the choice: no passed test is kept over it.
	big := append([]TestResult{{Name: "huge", Status: TestFailed, Error: strings.Repeat("x", 5000)}}, tests...)
	got = PickTests(big, 100, 4000)
	if len(got) != 0 {
		t.Fatalf("a budget smaller than the first failure kept %s", names(got))
	}
	if got := PickTests(nil, 10, 100); len(got) != 0 {
		t.Fatalf("none: %v", got)
	}
}

func TestKeepTestsBounds(t *testing.T) {
	tests := make([]TestResult, 30_000)
	for i := range tests {
		tests[i] = TestResult{Name: fmt.Sprintf("test <%d> & more", i), Suite: "s", Status: TestPassed, DurationMs: 12}
		if i%10 == 9 {
			tests[i].Status, tests[i].Error = TestFailed, strings.Repeat("a < b ", 30)
		}
	}
	kept, dropped := KeepTests(tests)
	size := len(encoded(t, kept))
	if len(kept) > MaxKeptTests || size > MaxKeptTestBytes || dropped != len(tests)-len(kept) || dropped == 0 {
		t.Fatalf("kept %d tests of %d bytes, dropped %d", len(kept), size, dropped)
	}
	failed := 0
	for _, tr := range kept {
		if tr.Status == TestFailed {
			failed++
		}
	}
	if failed != 3000 {
		t.Fatalf("kept %d of the 3000 failures, want all of them before any passed test", failed)
	}
	if Verdict(0, Summarize(tests)) != ExecFailed || Summarize(kept).Total != len(kept) {
		t.Fatal("verdict")
	}
}

// sameTest compares tests as == would if they had no list of attachments.
func sameTest(a, b TestResult) bool {
	return a.Name == b.Name && a.Suite == b.Suite && a.Status == b.Status && a.DurationMs == b.DurationMs &&
		a.Error == b.Error && a.Retries == b.Retries && a.Shard == b.Shard && slices.Equal(a.Attachments, b.Attachments)
}
