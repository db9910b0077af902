package auth

import (
	"regexp"
	"strings"
	"testing"

	"verdict/internal/domain"
)

var apiKeyShape = regexp.MustCompile(`^pk_live_[0-9a-f]{64}$`)

func TestNewAPIKey(t *testing.T) {
	value, prefix, hash := NewAPIKey()
	if !apiKeyShape.MatchString(value) {
		t.Fatalf("value %q has the wrong shape", value)
	}
	if prefix != value[:12] || !strings.HasPrefix(prefix, "pk_live_") {
		t.Fatalf("prefix %q is not the first 12 characters of %q", prefix, value)
	}
	if hash != HashAPIKey(value) || len(hash) != 64 || !isLowerHex(hash) {
		t.Fatalf("hash %q is not the hex SHA-256 of the value", hash)
	}
	// Known vector: SHA-256 of the empty string.
	if got := HashAPIKey(""); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("HashAPIKey(\"\") = %s", got)
	}
	if again, _, _ := NewAPIKey(); again == value {
		t.Fatal("two keys are equal")
	}
	if !LooksLikeAPIKey(value) {
		t.Fatal("a new key does not look like a key")
	}
}

func TestLooksLikeAPIKey(t *testing.T) {
	good := "pk_live_" + strings.Repeat("0123456789abcdef", 4)
	cases := map[string]bool{
		good:                                   true,
		"":                                     false,
		"pk_live_":                             false,
		good[:len(good)-1]:                     false,
		good + "0":                             false,
		good[8:]:                               false,
		"pk_live_" + strings.ToUpper(good[8:]): false,
		"pk_test_" + good[8:]:                  false,
		"PK_LIVE_" + good[8:]:                  false,
		"pk_live_" + strings.Repeat("g", 64):   false,
		good[:70] + "é":                        false,
	}
	for s, want := range cases {
		if got := LooksLikeAPIKey(s); got != want {
			t.Errorf("LooksLikeAPIKey(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestInviteToken(t *testing.T) {
	token, hash := NewInviteToken()
	if !domain.IsInviteToken(token) || !isLowerHex(token) {
		t.Fatalf("token %q is not 64 lower-case hex characters", token)
	}
	if hash != HashToken(token) || hash == token || len(hash) != 64 {
		t.Fatalf("hash %q is not the hex SHA-256 of the token", hash)
	}
	if other, _ := NewInviteToken(); other == token {
		t.Fatal("two tokens are equal")
	}
}

func FuzzLooksLikeAPIKey(f *testing.F) {
	value, _, _ := NewAPIKey()
	for _, s := range []string{value, "", "pk_live_", value + "0", value[:71], "pk_live_" + strings.Repeat("G", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := LooksLikeAPIKey(s), apiKeyShape.MatchString(s); got != want {
			t.Fatalf("LooksLikeAPIKey(%q) = %v, the shape says %v", s, got, want)
		}
	})
}

func BenchmarkHashAPIKey(b *testing.B) {
	value, _, _ := NewAPIKey()
	for b.Loop() {
		HashAPIKey(value)
	}
}
