package sqlstore

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"verdict/internal/domain"
)

// plainStrings must decode exactly as encoding/json does, or leave the text to it.
func FuzzPlainStrings(f *testing.F) {
	for _, s := range []string{`[]`, `["a"]`, `["a","b"]`, `["a\"b"]`, `["a", "b"]`, `["","x"]`, `[""]`, `["\u00e9"]`,
		"[\"\xff\"]", `["a","b",]`, `null`, `["a"],["b"]`, `[1]`, `["a""b"]`, `["\"]`, "[\"\x00\"]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := plainStrings(text)
		if !ok {
			return
		}
		var want []string
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatalf("plainStrings(%q) = %q, but encoding/json refuses it: %v", text, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plainStrings(%q) = %q, encoding/json %q", text, got, want)
		}
	})
}

// plainSummary must decode exactly as encoding/json does, or leave the text to it.
func FuzzPlainSummary(f *testing.F) {
	for _, s := range []string{`{"total":0,"passed":0,"failed":0,"skipped":0,"flaky":0}`,
		`{"total":12,"passed":9,"failed":1,"skipped":1,"flaky":1}`, `{"total":01,"passed":0,"failed":0,"skipped":0,"flaky":0}`,
		`{"total":-1,"passed":0,"failed":0,"skipped":0,"flaky":0}`, `{"passed":1}`, `{}`, `null`,
		`{"total":1,"passed":0,"failed":0,"skipped":0,"flaky":0} `, `{"total":99999999999999999999,"passed":0,"failed":0,"skipped":0,"flaky":0}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := plainSummary(text)
		if !ok {
			return
		}
		var want domain.Summary
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatalf("plainSummary(%q) = %+v, but encoding/json refuses it: %v", text, got, err)
		}
		if got != want {
			t.Fatalf("plainSummary(%q) = %+v, encoding/json %+v", text, got, want)
		}
	})
}

// plainTests must decode exactly as encoding/json does, or leave the text to it.
func FuzzPlainTests(f *testing.F) {
	written, _ := json.Marshal([]domain.TestResult{{Name: "pays", Suite: "cart", Status: domain.TestFailed, DurationMs: 120,
		Error: "expected 200, got 500", Retries: 2}, {Name: "opens", Status: domain.TestPassed}, {Name: "é ›", Suite: "a b"}})
	for _, s := range []string{string(written), `[]`, `null`, `[{}]`,
		`[{"name":"a","suite":"","status":"passed","durationMs":0,"retries":0}]`,
		`[{"name":"a","suite":"","status":"passed","durationMs":0,"error":"","retries":0}]`,
		`[{"name":"a\"b","suite":"","status":"passed","durationMs":0,"retries":0}]`,
		`[{"name":"a","suite":"","status":"passed","durationMs":-1,"retries":0}]`,
		`[{"name":"a","suite":"","status":"passed","durationMs":01,"retries":0}]`,
		`[{"name":"a","suite":"","status":"passed","durationMs":1,"retries":99999999999999999999}]`,
		`[{"name":"a","suite":"","status":"passed","durationMs":1,"retries":0},]`,
		`[{"name":"a","suite":"","status":"passed","durationMs":1,"retries":0}] `,
		`[{"name":"a","suite":"","status":"passed","durationMs":1,"retries":0,"shard":2}]`,
		`[{"name":"a","suite":"","status":"passed","durationMs":1,"retries":0,"shard":-2}]`,
		`[{"name":"a","suite":"","status":"failed","durationMs":1,"retries":1,"attachments":[{"name":"trace","contentType":"application/zip","path":"test-results/a/trace.zip"},{"name":"trace","contentType":"application/zip","path":"b/trace.zip","retry":1}]}]`,
		`[{"name":"a","suite":"","status":"failed","durationMs":1,"retries":1,"shard":3,"attachments":[{"name":"s","contentType":"","path":"p"}]},{"name":"b","suite":"","status":"passed","durationMs":1,"retries":0}]`,
		`[{"name":"a","suite":"","status":"failed","durationMs":1,"retries":1,"attachments":[]}]`,
		`[{"name":"a","suite":"","status":"failed","durationMs":1,"retries":1,"attachments":[{"name":"s","contentType":"","path":"p"},]}]`,
		`[{"name":"a","suite":"","status":"failed","durationMs":1,"retries":1,"attachments":[{"name":"s","contentType":"","path":"p","retry":01}]}]`,
		"[{\"name\":\"\xff\",\"suite\":\"\",\"status\":\"passed\",\"durationMs\":1,\"retries\":0}]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := plainTests(text)
		if !ok {
			return
		}
		var want []domain.TestResult
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatalf("plainTests(%q) = %+v, but encoding/json refuses it: %v", text, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plainTests(%q) = %+v, encoding/json %+v", text, got, want)
		}
	})
}

// Tests as json.Marshal writes them take the plain path.
func TestPlainTestsTakesWrittenTests(t *testing.T) {
	tests := []domain.TestResult{{Name: "pays", Suite: "cart", Status: domain.TestFailed, DurationMs: 120,
		Error: "expected 200, got 500", Retries: 2}, {Name: "opens", Status: domain.TestPassed},
		{Name: "traced", Status: domain.TestFlaky, Retries: 1, Shard: 2, Attachments: []domain.Attachment{
			{Name: "trace", ContentType: "application/zip", Path: "test-results/traced/trace.zip"},
			{Name: "screenshot", ContentType: "image/png", Path: "test-results/traced-retry1/shot.png", Retry: 1}}}}
	j, _ := json.Marshal(tests)
	got, ok := plainTests(string(j))
	if !ok || !reflect.DeepEqual(got, tests) {
		t.Fatalf("plainTests(%s) = %+v, %v", j, got, ok)
	}
}

// plainPoints must decode exactly as encoding/json does, or leave the text to it.
func FuzzPlainPoints(f *testing.F) {
	at := time.Date(2026, 3, 10, 9, 0, 0, 123456789, time.UTC)
	written, _ := json.Marshal([]domain.TestPoint{{TaskID: "run-1", Status: domain.TestFailed, Branch: "main", Commit: "abc", At: at},
		{TaskID: "run-2", Status: domain.TestPassed, At: at.Add(time.Hour)}})
	for _, s := range []string{string(written), `[]`, `null`, `[{}]`,
		`[{"t":"a","s":"passed","a":"2026-03-10T09:00:00Z"}]`,
		`[{"t":"a","s":"passed","b":"","a":"2026-03-10T09:00:00Z"}]`,
		`[{"t":"a","s":"passed","a":"2026-03-10T09:00:00+02:00"}]`,
		`[{"t":"a","s":"passed","a":"2026-03-10 09:00:00Z"}]`,
		`[{"t":"a","s":"passed","a":"2026-3-10T09:00:00Z"}]`,
		`[{"t":"a\"b","s":"passed","a":"2026-03-10T09:00:00Z"}]`,
		`[{"t":"a","s":"passed","a":"2026-03-10T09:00:00Z"},]`,
		"[{\"t\":\"\u2028\",\"s\":\"passed\",\"a\":\"2026-03-10T09:00:00Z\"}]",
		"[{\"t\":\"\xff\",\"s\":\"passed\",\"a\":\"2026-03-10T09:00:00Z\"}]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := plainPoints(text)
		if !ok {
			return
		}
		var want []domain.TestPoint
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatalf("plainPoints(%q) = %+v, but encoding/json refuses it: %v", text, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plainPoints(%q) = %+v, encoding/json %+v", text, got, want)
		}
	})
}

// appendPoints must write what the column encoder writes, or leave the points to it; and what
// it writes reads back through plainPoints.
func FuzzAppendPoints(f *testing.F) {
	f.Add("run-1", "passed", "main", "abc", int64(1773133200123456789), 0)
	f.Add("a\"b", "failed", "", "", int64(0), 3600)
	f.Add("é\u2028", "flaky", "rel/1", "", int64(-62135596800000000), -7200)
	f.Fuzz(func(t *testing.T, task, status, branch, commit string, nanos int64, offset int) {
		at := time.Unix(0, nanos).In(time.FixedZone("", offset%86400))
		pts := []domain.TestPoint{{TaskID: task, Status: domain.TestStatus(status), Branch: branch, Commit: commit, At: at},
			{TaskID: "run-2", Status: domain.TestPassed, At: at}}
		b, ok := appendPoints(nil, pts)
		if !ok {
			return
		}
		want, err := marshalJSON(pts)
		if err != nil {
			t.Fatalf("appendPoints wrote %s, but encoding/json refuses the points: %v", b, err)
		}
		if string(b) != want[0] {
			t.Fatalf("appendPoints wrote %s, encoding/json %s", b, want[0])
		}
		if _, ok := plainPoints(string(b)); !ok {
			t.Fatalf("plainPoints does not read what appendPoints wrote: %s", b)
		}
	})
}

// BenchmarkRecentPoints times a test's 20 newest results through the column, both ways: by
// hand and with encoding/json.
func BenchmarkRecentPoints(b *testing.B) {
	at := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	pts := make([]domain.TestPoint, 20)
	for i := range pts {
		pts[i] = domain.TestPoint{TaskID: fmt.Sprintf("nightly-%d", 1000+i), Status: domain.TestPassed, Branch: "main",
			Commit: "9fceb02d0ae598e95dc970b74767f19372d61af8", At: at.Add(time.Duration(i) * time.Hour)}
	}
	text, _ := encodePoints(pts)
	b.Run("by-hand", func(b *testing.B) {
		for range b.N {
			s, _ := encodePoints(pts)
			var back []domain.TestPoint
			if err := decodeJSON(s, &back); err != nil || len(back) != 20 {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for range b.N {
			j, _ := json.Marshal(pts)
			var back []domain.TestPoint
			if err := json.Unmarshal(j, &back); err != nil || len(back) != 20 || string(j) != text {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeTests decodes a run's 1000 kept tests, a third of them failed with a
// screenshot and a trace per attempt, through decodeJSON (the plain path) and encoding/json.
func BenchmarkDecodeTests(b *testing.B) {
	tests := make([]domain.TestResult, 1000)
	for i := range tests {
		tests[i] = domain.TestResult{Name: fmt.Sprintf("test %d pays the cart", i), Suite: "[chromium] checkout.spec.ts › Checkout",
			Status: domain.TestPassed, DurationMs: int64(i * 7), Retries: 0}
		if i%3 == 0 {
			tests[i].Status, tests[i].Error, tests[i].Retries = domain.TestFailed, "Expected: 42 Received: 41", 1
			for r := range 2 {
				dir := fmt.Sprintf("test-results/checkout-test-%d-chromium-retry%d/", i, r)
				tests[i].Attachments = append(tests[i].Attachments,
					domain.Attachment{Name: "screenshot", ContentType: "image/png", Path: dir + "test-failed-1.png", Retry: r},
					domain.Attachment{Name: "trace", ContentType: "application/zip", Path: dir + "trace.zip", Retry: r})
			}
		}
	}
	j, err := json.Marshal(tests)
	if err != nil {
		b.Fatal(err)
	}
	text := string(j)
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			var got []domain.TestResult
			if err := decodeJSON(text, &got); err != nil || len(got) != len(tests) {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var got []domain.TestResult
			if err := json.Unmarshal(j, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}
