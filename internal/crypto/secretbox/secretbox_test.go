package secretbox

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func testKey(fill byte) []byte { return bytes.Repeat([]byte{fill}, KeySize) }

func newBox(t testing.TB, fill byte) *Box {
	t.Helper()
	b, err := New(testKey(fill))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	b := newBox(t, 1)
	for _, p := range [][]byte{nil, []byte("sk-live-abc"), bytes.Repeat([]byte{0xff}, MaxPlaintext)} {
		s, err := b.Seal(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s, "v1:") {
			t.Fatalf("sealed value %.20q… lacks the version", s)
		}
		got, err := b.Open(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("Open(Seal(%d bytes)) = %d bytes", len(p), len(got))
		}
	}
}

func TestNonceIsFreshPerMessage(t *testing.T) {
	b := newBox(t, 1)
	s1, _ := b.Seal([]byte("same"))
	s2, _ := b.Seal([]byte("same"))
	if s1 == s2 {
		t.Fatal("sealing twice gave the same value")
	}
}

func TestKeyLength(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New accepted a %d-byte key", n)
		}
	}
}

func TestTooLarge(t *testing.T) {
	if _, err := newBox(t, 1).Seal(make([]byte, MaxPlaintext+1)); err == nil {
		t.Fatal("Seal accepted more than MaxPlaintext")
	}
}

func TestOpenRefuses(t *testing.T) {
	b := newBox(t, 1)
	good, _ := b.Seal([]byte("integration key"))
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(good, "v1:"))
	flip := func(i int) string {
		r := bytes.Clone(raw)
		r[i] ^= 1
		return "v1:" + base64.RawURLEncoding.EncodeToString(r)
	}
	otherKey, _ := newBox(t, 2).Seal([]byte("integration key"))
	cases := map[string]string{
		"empty":              "",
		"no version":         strings.TrimPrefix(good, "v1:"),
		"unknown version":    "v2:" + strings.TrimPrefix(good, "v1:"),
		"not base64":         "v1:***",
		"padded base64":      good + "==",
		"line break":         good[:10] + "\r\n" + good[10:],
		"too short":          "v1:" + base64.RawURLEncoding.EncodeToString(raw[:10]),
		"truncated tag":      "v1:" + base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]),
		"flipped nonce bit":  flip(0),
		"flipped cipher bit": flip(13),
		"flipped tag bit":    flip(len(raw) - 1),
		"other key":          otherKey,
	}
	for name, s := range cases {
		if p, err := b.Open(s); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: Open = %q, %v; want ErrOpen", name, p, err)
		}
	}
}

func FuzzOpen(f *testing.F) {
	b := newBox(f, 1)
	good, _ := b.Seal([]byte("seed"))
	for _, s := range []string{good, "", "v1:", "v1:AAAA", "v2:" + good[3:]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := b.Open(s)
		// Only "seed" was ever sealed with this key (each fuzz worker seals its own copy), a GCM
		// tag cannot be forged, and strict decoding leaves one encoding per sealed value.
		if err == nil && (!bytes.Equal(p, []byte("seed")) || "v1:"+base64.RawURLEncoding.EncodeToString(mustDecode(t, s[3:])) != s) {
			t.Fatalf("Open(%q) accepted a value Seal did not make: %q", s, p)
		}
		if err != nil && !errors.Is(err, ErrOpen) {
			t.Fatalf("Open(%q) error %v is not ErrOpen", s, err)
		}
	})
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
