package domain

import "testing"

func TestImageAllowed(t *testing.T) {
	server := []string{"registry.example.com/qa/*", "verdict-examples/pass", "debian", "registry.example.com/app:1.*"}
	for _, c := range []struct {
		image string
		want  bool
	}{
		{"registry.example.com/qa/login:2", true},
		{"registry.example.com/qa/team/deep@sha256:" + hex64, true},
		{"registry.example.com/qaevil/x", false},
		{"evil.example.com/registry.example.com/qa/x", false},
		{"verdict-examples/pass", true},
		{"verdict-examples/pass:latest", true},
		{"docker.io/verdict-examples/pass:v2", true},
		{"verdict-examples/fail", false},
		{"debian:bookworm", true},
		{"docker.io/library/debian", true},
		{"library/debian:12", true},
		{"registry.example.com/app:1.4", true},
		{"registry.example.com/app:2.0", false},
		{"registry.example.com/app", false}, // :latest is not 1.x
		{"127.0.0.1:18651/x", false},
	} {
		if got := ImageAllowed(c.image, server, nil); got != c.want {
			t.Errorf("ImageAllowed(%q) = %v, want %v", c.image, got, c.want)
		}
	}
	// The organization's list narrows the server's; it never widens it.
	org := []string{"verdict-examples/*"}
	if !ImageAllowed("verdict-examples/pass", server, org) || ImageAllowed("debian", server, org) {
		t.Error("organization list does not narrow the server's")
	}
	if ImageAllowed("verdict-examples/fail", server, org) {
		t.Error("organization list widened the server's")
	}
	if !ImageAllowed("anything/at:all", nil, nil) || !ImageAllowed("x", nil, []string{"*"}) {
		t.Error("empty lists must allow everything")
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestValidImage(t *testing.T) {
	for _, ok := range []string{"debian", "verdict-examples/pass:latest", "127.0.0.1:5000/a/b:c", "a/b@sha256:" + hex64} {
		if !ValidImage(ok) {
			t.Errorf("ValidImage(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", " debian", "Debian", "a b", "a/../b", "x:", "http://x/y", "a@sha256:12"} {
		if ValidImage(bad) {
			t.Errorf("ValidImage(%q) = true", bad)
		}
	}
	for _, ok := range []string{"*", "registry.example.com/qa/*", "x/y:1.*", "*/pass"} {
		if !ValidImagePattern(ok) {
			t.Errorf("ValidImagePattern(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "a b", "x/UPPER*", "é/*", "a\n"} {
		if ValidImagePattern(bad) {
			t.Errorf("ValidImagePattern(%q) = true", bad)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"a*c", "abc", true}, {"a*c", "ac", true}, {"a*c", "abcd", false}, {"*", "", true},
		{"a*b*c", "axxbyyc", true}, {"a*b*c", "acb", false}, {"ab*ab", "ab", false}, {"abc", "abc", true},
	} {
		if got := globMatch(c.p, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

func FuzzImageAllowed(f *testing.F) {
	f.Add("registry.example.com/qa/*", "registry.example.com/qa/x:1")
	f.Add("a*b*c", "aXbYc")
	f.Fuzz(func(t *testing.T, pattern, image string) {
		got := ImageAllowed(image, []string{pattern}, nil)
		// '*' alone allows everything; a pattern without '*' allows only its own spellings.
		if pattern == "*" && !got {
			t.Fatal("* refused an image")
		}
		if got && !ImageAllowed(image, nil, []string{pattern}) {
			t.Fatal("server and organization lists disagree")
		}
	})
}
