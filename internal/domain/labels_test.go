package domain

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var labelKeyShape = regexp.MustCompile(`^[a-z0-9_.-]{1,63}$`)

func TestValidateLabels(t *testing.T) {
	ok := map[string]string{"branch": "main", "ci.pipeline-id_2": "", "v": strings.Repeat("é", MaxLabelValueLen)}
	if err := ValidateLabels(ok); err != nil {
		t.Fatal(err)
	}
	if err := ValidateLabels(nil); err != nil {
		t.Fatal(err)
	}
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for _, c := range []struct {
		labels map[string]string
		msg    string
	}{
		{map[string]string{"Branch": "main"}, `label "Branch": a key is 1 to 63 of a-z, 0-9, _, . and -`},
		{map[string]string{"": "x"}, `label "": a key is 1 to 63 of a-z, 0-9, _, . and -`},
		{map[string]string{strings.Repeat("a", 64): "x"}, `label "` + strings.Repeat("a", 64) + `": a key is 1 to 63 of a-z, 0-9, _, . and -`},
		{map[string]string{"a": "x", "note": strings.Repeat("x", 257)}, `label "note": a value is at most 256 characters, without control characters`},
		{map[string]string{"note": "a\nb"}, `label "note": a value is at most 256 characters, without control characters`},
		{many, "at most 20 labels, got 21"},
	} {
		err := ValidateLabels(c.labels)
		var de *Error
		if !errors.As(err, &de) || de.Kind != KindInvalid || de.Code != "Validation error" || de.Message != c.msg {
			t.Errorf("%v: %#v, want 400 %q", c.labels, err, c.msg)
		}
	}
	for in, want := range map[string]Label{"branch:main": {"branch", "main"}, "k:": {"k", ""}, "url:http://x:1": {"url", "http://x:1"}} {
		if got, err := ParseLabelFilter(in); err != nil || got != want {
			t.Errorf("ParseLabelFilter(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "branch", ":main", "Branch:main", "a:\x00"} {
		if _, err := ParseLabelFilter(in); err == nil {
			t.Errorf("ParseLabelFilter(%q) accepted", in)
		}
	}
}

func FuzzValidateLabels(f *testing.F) {
	for _, s := range [][2]string{{"branch", "main"}, {"Branch", "x"}, {"", ""}, {"a.b-c_d", "é\u202e"}, {"k", "a\nb"},
		{strings.Repeat("a", 63), strings.Repeat("é", 256)}, {strings.Repeat("a", 64), "x"}, {"k", strings.Repeat("é", 257)},
		{"k", "a\xffb"}, {"k\x00", "v"}, {"k", "a:b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		err := ValidateLabels(map[string]string{k: v})
		keyOK := labelKeyShape.MatchString(k)
		valueOK := utf8.ValidString(v) && utf8.RuneCountInString(v) <= MaxLabelValueLen && !strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f })
		if (err == nil) != (keyOK && valueOK) {
			t.Fatalf("ValidateLabels(%q: %q) = %v; key ok %v, value ok %v", k, v, err, keyOK, valueOK)
		}
		if err != nil {
			var de *Error
			if !errors.As(err, &de) || de.Kind != KindInvalid || !strings.HasPrefix(de.Message, "label "+quoteLabel(k)+": ") {
				t.Fatalf("ValidateLabels(%q: %q): %#v does not name the label", k, v, err)
			}
			if !utf8.ValidString(de.Message) {
				t.Fatalf("message is not UTF-8: %q", de.Message)
			}
		}
		l, perr := ParseLabelFilter(k + ":" + v)
		if keyOK && (perr == nil) != valueOK {
			t.Fatalf("ParseLabelFilter(%q:%q) = %v, value ok %v", k, v, perr, valueOK)
		}
		if keyOK && perr == nil && (l.Key != k || l.Value != v) {
			t.Fatalf("ParseLabelFilter(%q:%q) = %+v", k, v, l)
		}
	})
}
