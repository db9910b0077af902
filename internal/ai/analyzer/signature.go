package analyzer

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
)

// SignatureLen is the length of a signature: 16 hex characters, 64 bits of SHA-256.
const SignatureLen = 16

// Signature returns a failure's signature: the first 16 hex characters of the SHA-256 of its
// normalised text. The same failure in another run, with other numbers, ids, ports, paths or
// times, has the same signature.
func Signature(message, stack string) string {
	return signatureOf(Normalize(message, stack))
}

func signatureOf(normalized string) string {
	sum := sha256.Sum256([]byte(normalized))
	return hex.EncodeToString(sum[:SignatureLen/2])
}

// minTokenLen drops one-letter tokens ("a", "s", "e" of pytest's error lines): they say nothing
// about a failure.
const minTokenLen = 2

// Tokens returns the distinct lower-case words of a normalised text, sorted: what near
// signatures are compared by.
func Tokens(normalized string) []string {
	seen := map[string]bool{}
	var out []string
	for i := 0; i < len(normalized); {
		if !isWordByte(normalized[i]) {
			i++
			continue
		}
		j := i
		for j < len(normalized) && isWordByte(normalized[j]) {
			j++
		}
		if w := asciiLower(normalized[i:j]); len(w) >= minTokenLen && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
		i = j
	}
	sort.Strings(out)
	return out
}

// Similarity is the Jaccard index of two sorted token sets (from Tokens): the words in both
// over the words in either, 0 when either is empty.
func Similarity(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(common) / float64(len(a)+len(b)-common)
}
