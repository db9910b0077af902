package domain

import (
	"regexp"
	"strings"
	"testing"
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
	}
	for s, want := range cases {
		if got := ValidEmail(s); got != want {
			t.Errorf("ValidEmail(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	if got := NormalizeEmail("  Ann.Lee@Example.COM\t"); got != "ann.lee@example.com" {
		t.Fatalf("NormalizeEmail = %q", got)
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
	for _, s := range []string{"a@b.co", "user.name+tag@example.com", "Ann <a@b.co>", "a@b..com", "a@b", `"q"@b.co`, "é@b.co", "a@b.co\n"} {
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
		if n := NormalizeEmail(s); NormalizeEmail(n) != n {
			t.Fatalf("NormalizeEmail is not idempotent on %q", s)
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
