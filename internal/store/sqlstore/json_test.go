package sqlstore

import (
	"encoding/json"
	"reflect"
	"testing"

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
		Error: "expected 200, got 500", Retries: 2}, {Name: "opens", Status: domain.TestPassed}}
	j, _ := json.Marshal(tests)
	got, ok := plainTests(string(j))
	if !ok || !reflect.DeepEqual(got, tests) {
		t.Fatalf("plainTests(%s) = %+v, %v", j, got, ok)
	}
}
