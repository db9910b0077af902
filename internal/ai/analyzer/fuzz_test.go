package analyzer

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"verdict/internal/domain"
)

// FuzzSignature: on any message and stack, normalising, signing and the rules do not panic,
// stay within their bounds, give the same answer twice, and normalising again changes nothing.
func FuzzSignature(f *testing.F) {
	for _, c := range loadCorpus(f) {
		for _, t := range c.Tests {
			f.Add(t.Error, t.Stack)
		}
	}
	f.Add("at 0x7f\x1b[31m /tmp/x:1:2 a@b.co http://h:1/p?q #1 5 s", "\tat x(Y.java:3)\n  File \"/tmp/a.py\", line 1")
	f.Add("\xff\xfe 30 second(s) 1.5s 2024-01-01T00:00:00Z", `C:\Users\bob\AppData\Local\Temp\x`)
	f.Fuzz(func(t *testing.T, message, stack string) {
		n := Normalize(message, stack)
		if len(n) > maxNormalizedBytes || !utf8.ValidString(n) {
			t.Fatalf("normalised text of %d bytes, valid UTF-8 %v", len(n), utf8.ValidString(n))
		}
		if again := Normalize(n, ""); again != n {
			t.Fatalf("normalising twice changes the text:\n%q\n%q", n, again)
		}
		s := Signature(message, stack)
		if len(s) != SignatureLen || s != Signature(message, stack) || s != signatureOf(n) {
			t.Fatalf("signature %q is not stable", s)
		}
		ft := newFailureText(message, stack)
		m := applyRules(ft, newRunContext("http://web:3000"))
		if m.rule == nil || len(m.matched) > maxMatchedBytes || m != applyRules(newFailureText(message, stack), newRunContext("http://web:3000")) {
			t.Fatalf("rules gave %+v", m)
		}
		exit := 1
		in := Input{TaskID: "t", BaseURL: message, ExitCode: &exit, Log: stack + "\n" + message,
			Tests: []Test{{TestResult: domain.TestResult{Name: message, Status: domain.TestFailed, Error: message}, Stack: stack}}}
		res := Analyse(in, History{}, []Triage{{Signature: s, Normalized: strings.ToUpper(n), Category: "flaky", By: stack}})
		// A failure without text is told apart by its test's name, so only one with text has s.
		if len(res.Failures) != 1 || n != "" && res.Failures[0].Signature != s || !res.Category.Valid() || res.Confidence < 0 || res.Confidence > 1 {
			t.Fatalf("analysis %+v", res)
		}
	})
}

// TestHostileInputsAreCheap: inputs made of one pattern repeated (quotes, numbers, paths,
// escapes, frames) cost no more than ordinary ones.
func TestHostileInputsAreCheap(t *testing.T) {
	for _, unit := range []string{
		`"a`, "#", "1", "a@b.", "http://", `C:\`, "/home/", "/tmp/", "1 s ", "a1b2", "\x1b[", "a:", "1.", "at ",
		"File \"", "E   x\n", "a.py:1:", "\n", " ", "assert 500 == ", "host='a', port=1 ", "ECONNREFUSED a:1 ", "é",
	} {
		s := strings.Repeat(unit, 40_000/len(unit))
		in := Input{TaskID: "t", BaseURL: "http://a:1", Log: s + s,
			Tests: []Test{{TestResult: domain.TestResult{Name: "n", Status: domain.TestFailed, Error: s}, Stack: s}}}
		start := time.Now()
		Analyse(in, History{}, []Triage{{Signature: "x", Normalized: s, Category: "flaky"}})
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Errorf("%q repeated: analysis took %v", unit, d)
		}
	}
}
