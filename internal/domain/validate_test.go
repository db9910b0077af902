package domain

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestValidPassword(t *testing.T) {
	cases := map[string]bool{
		"Passw0rd!":                            true,
		"Abcdef1!":                             true, // exactly 8
		"Abcde1!":                              false,
		"Passw0rd":                             false, // no special
		"passw0rd!":                            false, // no upper
		"PASSW0RD!":                            false, // no lower
		"Password!":                            false, // no digit
		"Abcdef1 ":                             false, // space is not special
		"Ébcdef1!":                             false, // only ASCII letters count
		"Aébcde1!":                             true,  // 8 characters, 9 bytes
		"":                                     false,
		"Aa1!" + strings.Repeat("x", 68):       true, // 72 bytes
		"Aa1!" + strings.Repeat("x", 69):       false,
		"Aa1!" + strings.Repeat("é", 34):       true, // 72 bytes
		"Aa1!" + strings.Repeat("é", 34) + "x": false,
		"Aa1!xxx\xff":                          false, // not UTF-8
		"Aa1!xxxx\x00":                         true,  // NUL is an ordinary character here
		strings.Repeat("Aa1!", 2):              true,
		"Aa1" + strings.Repeat("\u00a0", 4) + "!": true,
	}
	for p, want := range cases {
		if got := ValidPassword(p); got != want {
			t.Errorf("ValidPassword(%q) = %v, want %v", p, got, want)
		}
	}
	for _, c := range passwordSpecials {
		if p := "Abcdef1" + string(c); !ValidPassword(p) {
			t.Errorf("special %q not accepted", c)
		}
	}
}

func TestValidEmail(t *testing.T) {
	cases := map[string]bool{
		"a@b.co":                    true,
		"user.name+tag@example.com": true,
		"A@Example.COM":             true,
		"a@b.c":                     true,
		"":                          false,
		"no-at":                     false,
		"@example.com":              false,
		"a@":                        false,
		"a@b":                       false,
		"a@b.":                      false,
		"a@.com":                    false,
		"a@b..com":                  false,
		"a@@b.co":                   false,
		"a b@c.co":                  false,
		" a@b.co":                   false,
		"a@b.co\n":                  false,
		"Ann <a@b.co>":              false,
		`"quoted"@b.co`:             false,
		"a@[127.0.0.1]":             false,
		"a(comment)@b.co":           false,
		strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".com": true, // 254
		strings.Repeat("a", 64) + "@" + strings.Repeat("b", 186) + ".com": false,
		"a\x7f@b.co": false,
		"a\x00@b.co": false,
		// Internationalised addresses: one script, normalised, nothing invisible.
		"müller@example.de":            true,
		"иван@пример.рф":               true,
		"ελένη@παράδειγμα.ελ":          true,
		"山田@例え.jp":                     true,  // Han with Latin, as Japanese writes
		"a\u200b@example.com":          false, // zero-width space
		"ada@exa\u200bmple.com":        false,
		"a\u200db@example.com":         false, // zero-width joiner
		"a\u00adb@example.com":         false, // soft hyphen
		"a\u202eb@example.com":         false, // bidi override
		"a\u00a0b@example.com":         false, // no-break space
		"\u0430da@example.com":         false, // Cyrillic а among Latin letters
		"ada@ex\u0430mple.com":         false, // ... in the domain
		"ada@\u0430\u0440\u0440le.com": false,
		"иван@example.com":             false, // Cyrillic local part on a Latin domain
		"\u03b1da@example.com":         false, // Greek α among Latin letters
		"ａｄａ@example.com":              false, // full-width: valid only once normalised
		"Müller@example.de":            false, // not normalised (NormalizeEmail lower-cases)
		"a\u2764@example.com":          false, // symbols are not identifier characters
		"ada@bü_cher.de":               false, // not a valid IDNA name
		"a\xff@b.co":                   false,
	}
	for s, want := range cases {
		if got := ValidEmail(s); got != want {
			t.Errorf("ValidEmail(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		"  Ann.Lee@Example.COM\t":                    "ann.lee@example.com",
		"ａｄａ＠ｅｘａｍｐｌｅ．ｃｏｍ":                            "ada@example.com", // full-width letters, at sign and dot
		"\U0001d41a\U0001d41d\U0001d41a@example.com": "ada@example.com", // mathematical bold
		"\u3000ada@example.com\u3000":                "ada@example.com", // ideographic spaces
		"\u212a@example.com":                         "k@example.com",   // Kelvin sign
		"Müller@Example.DE":                          "müller@example.de",
		"\u0430da@example.com":                       "\u0430da@example.com", // look-alikes are refused, not mapped
	} {
		if got := NormalizeEmail(in); got != want {
			t.Errorf("NormalizeEmail(%q) = %q, want %q", in, got, want)
		}
		if n := NormalizeEmail(in); NormalizeEmail(n) != n {
			t.Errorf("NormalizeEmail is not idempotent on %q", in)
		}
	}
	if !ValidEmail(NormalizeEmail("ａｄａ＠ｅｘａｍｐｌｅ．ｃｏｍ")) {
		t.Error("a full-width address is not valid once normalised")
	}
}

func TestValidName(t *testing.T) {
	cases := map[string]bool{
		"Ada":               true,
		"Ada Lovelace":      true,
		"  Ada  ":           true,
		"Zoë O'Brien-Núñez": true,
		"山田 太郎":             true,
		"Ａｄａ":               true,  // full-width letters are visible
		"José\u0301":        true,  // a combining mark
		"ми\u200cхаил":      false, // ZWNJ where nothing is joined
		"\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645": true, // Persian needs ZWNJ between these letters
		"GitHub Actions 🚀":                                 true,
		"":                                                 false,
		"   ":                                              false,
		"Eve \u202eNIMDA":                                  false, // right-to-left override
		"Eve \u202dX":                                      false, // left-to-right override
		"\u2066Eve\u2069":                                  false, // isolates
		"Eve\u200f":                                        false, // right-to-left mark
		"Eve\u061c":                                        false, // Arabic letter mark
		"Ada\r\nBcc: x@example.com":                        false,
		"Ada\nX":                                           false,
		"Ada\tX":                                           false,
		"Ada\x00":                                          false,
		"Ada\u0085X":                                       false, // C1 control (next line)
		"Ada\u2028X":                                       false, // line separator
		"Ada\u2029X":                                       false, // paragraph separator
		"A\u200bda":                                        false, // zero-width space
		"A\u00adda":                                        false, // soft hyphen
		"A\u2060da":                                        false, // word joiner
		"\ufeffAda":                                        false, // byte order mark
		"Ada\ue000":                                        false, // private use
		"Ada\U000e0041":                                    false, // tag character
		"\U0001f468\u200d\U0001f469":                       false, // ZWJ emoji sequence
		"Ada\xff":                                          false,
		strings.Repeat("a", 100):                           true,
		strings.Repeat("é", 100):                           true,
		strings.Repeat("a", 101):                           false,
	}
	for s, want := range cases {
		if got := ValidName(s); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want)
		}
		n := utf8.RuneCountInString(strings.TrimSpace(s))
		if got := ValidOrganizationName(s); got != (want && n >= 2) {
			t.Errorf("ValidOrganizationName(%q) = %v, want %v", s, got, want && n >= 2)
		}
	}
}

func TestSlugify(t *testing.T) {
	cases := map[string]string{
		"Acme Inc.":                     "acme-inc",
		"  --Hello__World--  ":          "hello-world",
		"Team 42":                       "team-42",
		"":                              "org",
		"!!!":                           "org",
		"Ünïcödé":                       "n-c-d",
		strings.Repeat("a", 100):        strings.Repeat("a", 64),
		strings.Repeat("a", 63) + " b":  strings.Repeat("a", 63),
		strings.Repeat("a", 62) + " bc": strings.Repeat("a", 62) + "-b",
		"already-a-slug":                "already-a-slug",
	}
	for in, want := range cases {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzValidPassword(f *testing.F) {
	for _, s := range []string{"Passw0rd!", "Abcdef1!", "Abcde1!", "passw0rd!", "Aa1!" + strings.Repeat("é", 34), "Aa1!xxx\xff", "K\u212aa1!xxxx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		want := utf8.ValidString(p) && utf8.RuneCountInString(p) >= 8 && len(p) <= MaxPasswordBytes &&
			strings.ContainsAny(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
			strings.ContainsAny(p, "abcdefghijklmnopqrstuvwxyz") &&
			strings.ContainsAny(p, "0123456789") &&
			strings.ContainsAny(p, passwordSpecials)
		if got := ValidPassword(p); got != want {
			t.Fatalf("ValidPassword(%q) = %v, want %v", p, got, want)
		}
	})
}

func FuzzValidEmail(f *testing.F) {
	for _, s := range []string{"a@b.co", "user.name+tag@example.com", "Ann <a@b.co>", "a@b..com", "a@b", `"q"@b.co`, "é@b.co", "a@b.co\n",
		"иван@пример.рф", "\u0430da@example.com", "a\u200b@example.com", "ａｄａ@example.com", "山田@例え.jp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidEmail(s) {
			return
		}
		at := strings.LastIndexByte(s, '@')
		if len(s) > MaxEmailLength || at < 1 || strings.ContainsAny(s, " \t\r\n<>\"(),;:\\[]") {
			t.Fatalf("ValidEmail(%q) accepted a malformed address", s)
		}
		if d := s[at+1:]; !strings.Contains(d, ".") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
			t.Fatalf("ValidEmail(%q) accepted domain %q", s, d)
		}
		if n := NormalizeEmail(s); NormalizeEmail(n) != n || !ValidEmail(n) {
			t.Fatalf("NormalizeEmail(%q) = %q: not idempotent or no longer valid", s, n)
		}
		latin, cyrillic, greek := false, false, false
		for _, r := range s {
			if r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Z, unicode.Co, unicode.Cs) {
				t.Fatalf("ValidEmail(%q) accepted %U", s, r)
			}
			latin = latin || unicode.Is(unicode.Latin, r)
			cyrillic = cyrillic || unicode.Is(unicode.Cyrillic, r)
			greek = greek || unicode.Is(unicode.Greek, r)
		}
		if latin && (cyrillic || greek) || cyrillic && greek {
			t.Fatalf("ValidEmail(%q) accepted mixed scripts", s)
		}
		if !isASCII(s) && NormalizeEmail(s) != s {
			t.Fatalf("ValidEmail(%q) accepted an internationalised address that is not normalised", s)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{" Ann.Lee@Example.COM\t", "ａｄａ＠ｅｘａｍｐｌｅ．ｃｏｍ", "\u212a@x.co", "\u0130@x.co", "\u01c5@x.co",
		"\u3000a@b.co", "a\u0345\u0399@b.co", "\xffA@b.co", "\u1e9e@x.de"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeEmail(s)
		if NormalizeEmail(n) != n {
			t.Fatalf("NormalizeEmail(%q) = %q, but NormalizeEmail of that = %q", s, n, NormalizeEmail(n))
		}
		// Plain ASCII addresses keep the form they always had: trimmed and lower-cased.
		if isASCII(s) && n != strings.ToLower(strings.TrimSpace(s)) {
			t.Fatalf("NormalizeEmail(%q) = %q changed an ASCII address beyond case and spaces", s, n)
		}
	})
}

// bidiControls reorder text on screen: marks, embeddings, overrides and isolates.
var bidiControls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"Ada", "Eve \u202eNIMDA", "Acme\r\nBcc: x", "山田 太郎", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
		"\U0001f468\u200d\U0001f469", "A\u200bda", "Ada\u0085", "a\xffb", strings.Repeat("é", 101), " x "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		trimmed := strings.TrimSpace(s)
		n := utf8.RuneCountInString(trimmed)
		ok := ValidName(s)
		if ValidOrganizationName(s) != (ok && n >= 2) {
			t.Fatalf("ValidOrganizationName(%q) = %v, ValidName = %v", s, ValidOrganizationName(s), ok)
		}
		printableASCII := trimmed != ""
		for i := 0; i < len(trimmed); i++ {
			printableASCII = printableASCII && trimmed[i] >= ' ' && trimmed[i] < 0x7f
		}
		if printableASCII && n <= MaxNameLength && !ok {
			t.Fatalf("ValidName(%q) refused printable ASCII", s)
		}
		if !ok {
			return
		}
		if n < 1 || n > MaxNameLength || !utf8.ValidString(s) || strings.ContainsAny(s, bidiControls) {
			t.Fatalf("ValidName(%q) accepted a malformed name", s)
		}
		for _, r := range trimmed {
			if unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp, unicode.Co) || unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Join_Control, r) {
				t.Fatalf("ValidName(%q) accepted %U", s, r)
			}
		}
	})
}

var slugShape = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func FuzzSlugify(f *testing.F) {
	for _, s := range []string{"Acme Inc.", "", "!!!", "Ünïcödé", strings.Repeat("a", 63) + " b", "\u212a", "a\xffb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slug := Slugify(s)
		if len(slug) > 64 || !slugShape.MatchString(slug) {
			t.Fatalf("Slugify(%q) = %q, not a slug", s, slug)
		}
		if again := Slugify(slug); again != slug {
			t.Fatalf("Slugify(%q) = %q, but Slugify of that = %q", s, slug, again)
		}
	})
}
