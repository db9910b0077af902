package scm

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		glob, branch string
		want         bool
	}{
		{"main", "main", true},
		{"main", "mainline", false},
		{"release/*", "release/1.2", true},
		{"release/*", "release/1.2/hotfix", false},
		{"release/**", "release/1.2/hotfix", true},
		{"release/*", "release/", true},
		{"**", "any/thing", true},
		{"*", "feature/x", false},
		{"feature-?", "feature-a", true},
		{"feature-?", "feature-ab", false},
		{"v?/*", "v1/x", true},
		{"*-fix", "login-fix", true},
		{"a**b", "a/x/y/b", true},
		{"", "", true},
		{"", "main", false},
	} {
		if got := Match(c.glob, c.branch); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.glob, c.branch, got, c.want)
		}
	}
}

// FuzzMatch: a glob without "**" and brackets matches as path.Match does, and a glob matches
// itself when it holds no wildcard; nothing panics.
func FuzzMatch(f *testing.F) {
	f.Add("release/*", "release/1.2")
	f.Add("**/x", "a/b/x")
	f.Add("f?o", "foo")
	f.Fuzz(func(t *testing.T, glob, branch string) {
		if len(glob) > 64 || len(branch) > 64 || !utf8.ValidString(glob) || !utf8.ValidString(branch) {
			return // events' branches are JSON strings: valid UTF-8
		}
		got := Match(glob, branch)
		if !strings.ContainsAny(glob, "*?") && got != (glob == branch) {
			t.Fatalf("Match(%q, %q) = %v for a literal", glob, branch, got)
		}
		if strings.Contains(glob, "**") || strings.ContainsAny(glob, "[]\\") {
			return
		}
		if want, err := path.Match(glob, branch); err == nil && want != got {
			t.Fatalf("Match(%q, %q) = %v, path.Match says %v", glob, branch, got, want)
		}
	})
}
