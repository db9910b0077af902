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

const (
	secretA = "0123456789abcdef0123456789abcdef-a"
	exec    = "0a1b2c3d4e5f60718293a4b5" // the execution's own ID, not its reusable taskId
	user    = "5f4e3d2c1b0a99887766554f"
)

const tokenAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

func TestSignVerify(t *testing.T) {
	s := testSigner(t, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tok := s.Sign(org, exec, user, now)

	if len(tok) > 80 || strings.Trim(tok, tokenAlphabet) != "" || strings.Count(tok, ".") != 2 {
		t.Errorf("token %q is not compact and URL-safe", tok)
	}
	for _, at := range []time.Duration{0, time.Minute, TokenTTL - time.Second} {
		if u, err := s.Verify(tok, org, exec, now.Add(at)); err != nil || u != user {
			t.Errorf("after %v: %q, %v", at, u, err)
		}
	}
	for _, at := range []time.Duration{TokenTTL, TokenTTL + time.Second, 24 * time.Hour} {
		if _, err := s.Verify(tok, org, exec, now.Add(at)); !errors.Is(err, ErrTokenExpired) {
			t.Errorf("after %v: %v, want ErrTokenExpired", at, err)
		}
	}
	for _, c := range []struct{ what, org, exec string }{
		{"another execution", org, "0a1b2c3d4e5f60718293a4b6"},
		{"another organization", "otherorg", exec},
		{"swapped fields", exec, org},
		{"fields shifted across the boundary", org + "0", exec[1:]},
		{"empty fields", "", ""},
	} {
		if u, err := s.Verify(tok, c.org, c.exec, now); !errors.Is(err, ErrTokenInvalid) || u != "" {
			t.Errorf("%s: %q, %v", c.what, u, err)
		}
	}
	if _, err := testSigner(t, secretA+"-other").Verify(tok, org, exec, now); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("another secret: %v", err)
	}
}

// The user is signed: another user's ID written into a token does not verify, and each user
// gets their own token.
func TestTokenBoundToUser(t *testing.T) {
	s := testSigner(t, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	const other = "5f4e3d2c1b0a998877665540"
	for _, c := range []struct {
		name         string
		sign         func(o, e, u string, t time.Time) string
		verify       func(tok, o, e string, t time.Time) (string, error)
		verifyOthers func(tok, o, e string, t time.Time) (string, error)
	}{{"exchange", s.Sign, s.Verify, s.VerifyLink}, {"link", s.SignLink, s.VerifyLink, s.Verify}} {
		mine, theirs := c.sign(org, exec, user, now), c.sign(org, exec, other, now)
		if mine == theirs {
			t.Fatalf("%s: two users got the same token", c.name)
		}
		if u, err := c.verify(theirs, org, exec, now); err != nil || u != other {
			t.Errorf("%s: %q, %v", c.name, u, err)
		}
		exp, rest, _ := strings.Cut(mine, ".")
		_, mac, _ := strings.Cut(rest, ".")
		for _, forged := range []string{exp + "." + other + "." + mac, exp + "." + strings.ToUpper(user) + "." + mac, exp + "." + user + "0." + mac} {
			if u, err := c.verify(forged, org, exec, now); !errors.Is(err, ErrTokenInvalid) || u != "" {
				t.Errorf("%s: %q verified as %q, %v", c.name, forged, u, err)
			}
		}
		if _, err := c.verifyOthers(mine, org, exec, now); !errors.Is(err, ErrTokenInvalid) {
			t.Errorf("%s: taken for the other purpose: %v", c.name, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a/b", "a b", "a%2e", strings.Repeat("a", maxUserID+1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Sign accepted the user ID %q", bad)
				}
			}()
			s.Sign(org, exec, bad, now)
		}()
	}
}

// SignLink makes the browsing link's token: bound to the run and user, valid for SessionTTL,
// and of another purpose than Sign's, so neither kind passes for the other.
func TestSignLink(t *testing.T) {
	s := testSigner(t, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	if SessionTTL != 2*time.Hour {
		t.Errorf("SessionTTL = %v, want 2h", SessionTTL)
	}
	tok := s.SignLink(org, exec, user, now)
	if len(tok) > 80 || strings.Trim(tok, tokenAlphabet) != "" {
		t.Errorf("link token %q", tok)
	}
	for _, at := range []time.Duration{0, TokenTTL, time.Hour, SessionTTL - time.Second} {
		if u, err := s.VerifyLink(tok, org, exec, now.Add(at)); err != nil || u != user {
			t.Errorf("after %v: %q, %v", at, u, err)
		}
	}
	for _, at := range []time.Duration{SessionTTL, SessionTTL + time.Second} {
		if _, err := s.VerifyLink(tok, org, exec, now.Add(at)); !errors.Is(err, ErrTokenExpired) {
			t.Errorf("after %v: %v, want ErrTokenExpired", at, err)
		}
	}
	if _, err := s.VerifyLink(tok, "otherorg", exec, now); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("another organization: %v", err)
	}
	if _, err := s.VerifyLink(s.SignLink(org, exec, user, now.Add(-3*time.Hour)), org, exec, now); !errors.Is(err, ErrTokenExpired) {
		t.Errorf("signed 3h ago: %v", err)
	}
	if _, err := s.Verify(tok, org, exec, now); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("a link token taken as an exchange token: %v", err)
	}
	if _, err := s.VerifyLink(s.Sign(org, exec, user, now), org, exec, now); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("an exchange token taken as a link token: %v", err)
	}
}

func TestVerifyTampering(t *testing.T) {
	s := testSigner(t, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tok := s.Sign(org, exec, user, now)
	for i := range tok {
		for _, c := range tokenAlphabet {
			if byte(c) == tok[i] {
				continue
			}
			forged := tok[:i] + string(c) + tok[i+1:]
			if _, err := s.Verify(forged, org, exec, now); err == nil {
				t.Fatalf("forged token %q (position %d) verified", forged, i)
			}
		}
	}
	// A later expiry written into a genuine token does not verify.
	exp, rest, _ := strings.Cut(tok, ".")
	if _, err := s.Verify("zzzzzz."+rest, org, exec, now); !errors.Is(err, ErrTokenInvalid) || exp == "zzzzzz" {
		t.Errorf("extended expiry: %v", err)
	}
	_, mac, _ := strings.Cut(rest, ".")
	for _, bad := range []string{"", ".", "..", tok + ".", "." + tok, tok + "=", " " + tok, strings.ToUpper(exp) + "." + rest, "0" + tok, "-" + tok, "+" + tok,
		exp + "." + mac, exp + ".." + mac, exp + "." + user + "." + user + "." + mac, strings.Repeat("a", 4096)} {
		if _, err := s.Verify(bad, org, exec, now); !errors.Is(err, ErrTokenInvalid) {
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
	valid := s.Sign(org, exec, user, now)
	f.Add(valid, org, exec)
	f.Add(valid, "otherorg", exec)
	f.Add("zzzzzzzz."+user+".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", org, exec)
	f.Add("1..", "", "")
	f.Fuzz(func(t *testing.T, token, o, e string) {
		u, err := s.Verify(token, o, e, now)
		if err == nil && (token != valid || o != org || e != exec || u != user) {
			t.Fatalf("Verify(%q, %q, %q) accepted for %q", token, o, e, u)
		}
		if err != nil && (u != "" || !errors.Is(err, ErrTokenInvalid) && !errors.Is(err, ErrTokenExpired)) {
			t.Fatalf("unexpected %q, %v", u, err)
		}
	})
}
