package report

import (
	"testing"
	"time"
)

// Plausible is what the report route asks before it reads a run: every token Verify or
// VerifyLink would accept passes, and garbage or an expired token does not.
func TestPlausible(t *testing.T) {
	s := testSigner(t, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tok, link := s.Sign(org, exec, user, now), s.SignLink(org, exec, user, now)
	for _, c := range []struct {
		token string
		at    time.Time
		want  bool
	}{
		{tok, now, true},
		{link, now.Add(SessionTTL - time.Second), true},
		{tok, now.Add(TokenTTL), false},
		{link, now.Add(SessionTTL), false},
		{"", now, false},
		{"bogus", now, false},
		{tok + "A", now, false},
		{"0" + tok, now, false},
		{"zzzzzzzz." + user + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", now, true}, // well formed: only the run can refuse it
		{"zzzzzzzz." + user + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA*", now, false},
	} {
		if got := Plausible(c.token, c.at); got != c.want {
			t.Errorf("Plausible(%q) at %s = %v, want %v", c.token, c.at, got, c.want)
		}
	}
}

// FuzzPlausible: whatever the input, a token that verifies is plausible.
func FuzzPlausible(f *testing.F) {
	s := testSigner(f, secretA)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	f.Add(s.Sign(org, exec, user, now), int64(0))
	f.Add(s.SignLink(org, exec, user, now), int64(7000))
	f.Add("1..", int64(-1))
	f.Fuzz(func(t *testing.T, token string, after int64) {
		at := now.Add(time.Duration(after) * time.Second)
		_, err := s.Verify(token, org, exec, at)
		_, lerr := s.VerifyLink(token, org, exec, at)
		if (err == nil || lerr == nil) && !Plausible(token, at) {
			t.Fatalf("%q verifies at %s but is not plausible", token, at)
		}
	})
}
