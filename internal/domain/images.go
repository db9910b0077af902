package domain

import (
	"strings"

	"github.com/distribution/reference"
)

// Image policy: which container images runs may use. The server's patterns bound every
// organization; an organization's own patterns narrow them further. An empty list allows
// everything, so a single-tenant install needs no setting.
//
// A pattern is an image reference in which '*' stands for any run of characters, '/' and ':'
// included: "registry.example.com/qa/*" allows every repository under that path and any tag,
// "verdict-examples/pass" allows that repository at any tag or digest,
// "registry.example.com/app:1.*" only the 1.x tags. A pattern is matched against the image as
// given and as the engine reads it (docker.io/library/ added, :latest when no tag), so
// "debian" and "docker.io/library/debian:latest" are the same image to the policy.

// MaxImagePatterns bounds an organization's list.
const MaxImagePatterns = 50

// ValidImage reports whether image is a reference the engine accepts (lower-case repository,
// optional registry host, tag or digest).
func ValidImage(image string) bool {
	if image == "" || len(image) > 512 || strings.TrimSpace(image) != image {
		return false
	}
	_, err := reference.ParseNormalizedNamed(image)
	return err == nil
}

// ValidImagePattern reports whether p is a usable pattern: a reference whose '*' may stand
// anywhere, at most 256 characters, no spaces or control characters.
func ValidImagePattern(p string) bool {
	if p == "" || len(p) > 256 {
		return false
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f || r > 0x7e {
			return false
		}
	}
	// The pattern with each '*' as a plain name character must itself read as a reference.
	_, err := reference.ParseNormalizedNamed(strings.ReplaceAll(p, "*", "x"))
	return err == nil
}

// ImageAllowed reports whether image passes both lists (an empty list passes everything).
func ImageAllowed(image string, server, org []string) bool {
	forms := imageForms(image)
	return matchesAny(forms, server) && matchesAny(forms, org)
}

// imageForms are the spellings of one image a pattern may be written against: as given, the
// familiar and the fully qualified name, each with and without its tag or digest.
func imageForms(image string) []string {
	forms := []string{image}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return forms
	}
	tagged := reference.TagNameOnly(named)
	return append(forms, reference.FamiliarName(named), named.Name(),
		reference.FamiliarString(tagged), tagged.String())
}

func matchesAny(forms, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		for _, f := range forms {
			if globMatch(p, f) {
				return true
			}
		}
	}
	return false
}

// globMatch matches s against pattern, where '*' matches any run of characters (none
// included) and everything else matches itself.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
