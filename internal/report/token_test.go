package report

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func testSigner(t testing.TB, secret string) *Signer {
	t.Helper()
	s, err := NewSigner([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const secretA = "0123456789abcdef0123456789abcdef-a"

func TestSignVerify(t *testing.T) {
	s := testSigner(t, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tok := s.Sign(org, task, now)

	if len(tok) > 60 || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" {
		t.Errorf("token %q is not compact and URL-safe", tok)
	}
	for _, at := range []time.Duration{0, time.Minute, TokenTTL - time.Second} {
		if err := s.Verify(tok, org, task, now.Add(at)); err != nil {
			t.Errorf("after %v: %v", at, err)
		}
	}
	for _, at := range []time.Duration{TokenTTL, TokenTTL + time.Second, 24 * time.Hour} {
		if err := s.Verify(tok, org, task, now.Add(at)); !errors.Is(err, ErrTokenExpired) {
			t.Errorf("after %v: %v, want ErrTokenExpired", at, err)
		}
	}
	for _, c := range []struct{ what, org, task string }{
		{"another task", org, "run-2"},
		{"another organization", "otherorg", task},
		{"swapped fields", task, org},
		{"fields shifted across the boundary", org + "r", task[1:]},
		{"empty fields", "", ""},
	} {
		if err := s.Verify(tok, c.org, c.task, now); !errors.Is(err, ErrTokenInvalid) {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	if err := testSigner(t, secretA+"-other").Verify(tok, org, task, now); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("another secret: %v", err)
	}
}

// SignLink makes the browsing link's token: bound to the run, valid for SessionTTL, and of
// another purpose than Sign's, so neither kind passes for the other.
func TestSignLink(t *testing.T) {
	s := testSigner(t, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	if SessionTTL != 2*time.Hour {
		t.Errorf("SessionTTL = %v, want 2h", SessionTTL)
	}
	tok := s.SignLink(org, task, now)
	if len(tok) > 60 {
		t.Errorf("link token %q", tok)
	}
	for _, at := range []time.Duration{0, TokenTTL, time.Hour, SessionTTL - time.Second} {
		if err := s.VerifyLink(tok, org, task, now.Add(at)); err != nil {
			t.Errorf("after %v: %v", at, err)
		}
	}
	for _, at := range []time.Duration{SessionTTL, SessionTTL + time.Second} {
		if err := s.VerifyLink(tok, org, task, now.Add(at)); !errors.Is(err, ErrTokenExpired) {
			t.Errorf("after %v: %v, want ErrTokenExpired", at, err)
		}
	}
	if err := s.VerifyLink(tok, "otherorg", task, now); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("another organization: %v", err)
	}
	if err := s.VerifyLink(s.SignLink(org, task, now.Add(-3*time.Hour)), org, task, now); !errors.Is(err, ErrTokenExpired) {
		t.Errorf("signed 3h ago: %v", err)
	}
	if err := s.Verify(tok, org, task, now); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("a link token taken as an exchange token: %v", err)
	}
	if err := s.VerifyLink(s.Sign(org, task, now), org, task, now); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("an exchange token taken as a link token: %v", err)
	}
}

func TestVerifyTampering(t *testing.T) {
	s := testSigner(t, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tok := s.Sign(org, task, now)
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."
	for i := range tok {
		for _, c := range alphabet {
			if byte(c) == tok[i] {
				continue
			}
			forged := tok[:i] + string(c) + tok[i+1:]
			if err := s.Verify(forged, org, task, now); err == nil {
				t.Fatalf("forged token %q (position %d) verified", forged, i)
			}
		}
	}
	// A later expiry written into a genuine token does not verify.
	exp, mac, _ := strings.Cut(tok, ".")
	if err := s.Verify("zzzzzz."+mac, org, task, now); !errors.Is(err, ErrTokenInvalid) || exp == "zzzzzz" {
		t.Errorf("extended expiry: %v", err)
	}
	for _, bad := range []string{"", ".", tok + ".", "." + tok, tok + "=", " " + tok, strings.ToUpper(exp) + "." + mac, "0" + tok, "-" + tok, "+" + tok, strings.Repeat("a", 4096)} {
		if err := s.Verify(bad, org, task, now); !errors.Is(err, ErrTokenInvalid) {
			t.Errorf("Verify(%q) = %v", bad, err)
		}
	}
}

func TestNewSignerRefusesShortSecrets(t *testing.T) {
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
}

func FuzzVerify(f *testing.F) {
	s := testSigner(f, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	valid := s.Sign(org, task, now)
	f.Add(valid, org, task)
	f.Add(valid, "otherorg", task)
	f.Add("zzzzzzzz.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", org, task)
	f.Add("1.", "", "")
	f.Fuzz(func(t *testing.T, token, o, tk string) {
		err := s.Verify(token, o, tk, now)
		if err == nil && (token != valid || o != org || tk != task) {
			t.Fatalf("Verify(%q, %q, %q) accepted", token, o, tk)
		}
		if err != nil && !errors.Is(err, ErrTokenInvalid) && !errors.Is(err, ErrTokenExpired) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}
