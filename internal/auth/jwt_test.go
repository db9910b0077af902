package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"verdict/internal/domain"

	"verdict/internal/testenv"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef-test")

func newTokens(t testing.TB, lifetime time.Duration) (*Tokens, *testenv.Clock) {
	t.Helper()
	clock := newTestClock()
	tk, err := NewTokens(testSecret, lifetime, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return tk, clock
}

// handMade signs header.payload with HMAC-SHA256 and the test secret whatever the header says,
// to build tokens the library would refuse to make.
func handMade(header, payload map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(header) + "." + enc(payload)
	return signing + "." + hs256(signing)
}

func hs256(signing string) string {
	m := hmac.New(sha256.New, testSecret)
	m.Write([]byte(signing))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func segment(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestIssueVerify(t *testing.T) {
	tk, clock := newTokens(t, 0)
	now := clock.Now()
	token, err := tk.Issue("u1", "o1", domain.RoleDeveloper)
	if err != nil {
		t.Fatal(err)
	}
	if h := segment(t, token, 0); h["alg"] != "HS256" {
		t.Fatalf("header = %v, want alg HS256", h)
	}
	p := segment(t, token, 1)
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"exp", "iat", "jti", "organizationId", "role", "userId"}; !slices.Equal(keys, want) {
		t.Fatalf("claims %v, want exactly %v", keys, want)
	}
	c, err := tk.Verify(token)
	if err != nil {
		t.Fatal(err)
	}
	want := Claims{ID: p["jti"].(string), UserID: "u1", OrganizationID: "o1", Role: domain.RoleDeveloper, IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	if !c.IssuedAt.Equal(want.IssuedAt) || !c.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("times = %v..%v, want %v..%v", c.IssuedAt, c.ExpiresAt, want.IssuedAt, want.ExpiresAt)
	}
	c.IssuedAt, c.ExpiresAt, want.IssuedAt, want.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if c != want {
		t.Fatalf("claims = %+v, want %+v", c, want)
	}
}

func TestTokenExpiry(t *testing.T) {
	tk, clock := newTokens(t, time.Hour)
	token, err := tk.Issue("u1", "o1", domain.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour - time.Second)
	if _, err := tk.Verify(token); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	clock.Advance(time.Second)
	_, err = tk.Verify(token)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindUnauthorized || de.Code != "Invalid or expired token" || de.Message != "The token has expired" {
		t.Fatalf("at expiry: %v, want 401 expired", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	tk, clock := newTokens(t, 0)
	now := clock.Now()
	iat, exp := now.Unix(), now.Add(time.Hour).Unix()
	claims := func(edit func(map[string]any)) map[string]any {
		m := map[string]any{"userId": "u1", "organizationId": "o1", "role": "admin", "iat": iat, "exp": exp}
		if edit != nil {
			edit(m)
		}
		return m
	}
	hs256Header := map[string]any{"alg": "HS256", "typ": "JWT"}
	libSigned := func(m jwt.SigningMethod, key any) string {
		s, err := jwt.NewWithClaims(m, jwt.MapClaims(claims(nil))).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := handMade(hs256Header, claims(nil))
	if _, err := tk.Verify(good); err != nil {
		t.Fatalf("hand-made control token refused: %v", err)
	}
	parts := strings.Split(good, ".")
	// The signature's last base64 character carries 2 unused bits: flipping one decodes to
	// the same bytes unless decoding is strict.
	last := parts[2][len(parts[2])-1]
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	nonCanonical := parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-1] + string(alphabet[strings.IndexByte(alphabet, last)^1])
	admin, _ := json.Marshal(claims(func(m map[string]any) { m["organizationId"] = "o2" }))
	otherTokens, err := NewTokens([]byte("another-secret-another-secret-another"), 0, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	otherSecret, _ := otherTokens.Issue("u1", "o1", domain.RoleAdmin)

	cases := map[string]string{
		"empty":              "",
		"garbage":            "not.a.token",
		"two segments":       parts[0] + "." + parts[1],
		"alg none":           libSigned(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType),
		"HS384":              libSigned(jwt.SigningMethodHS384, testSecret),
		"HS512":              libSigned(jwt.SigningMethodHS512, testSecret),
		"RS256 header":       handMade(map[string]any{"alg": "RS256", "typ": "JWT"}, claims(nil)),
		"other secret":       otherSecret,
		"payload swapped":    parts[0] + "." + base64.RawURLEncoding.EncodeToString(admin) + "." + parts[2],
		"signature stripped": parts[0] + "." + parts[1] + ".",
		"non-canonical sig":  nonCanonical,
		"padded segment":     good + "=",
		"CR LF in signature": good[:len(good)-4] + "\r\n" + good[len(good)-4:],
		"space in signature": good[:len(good)-4] + " " + good[len(good)-4:],
		"no exp":             handMade(hs256Header, claims(func(m map[string]any) { delete(m, "exp") })),
		"no iat":             handMade(hs256Header, claims(func(m map[string]any) { delete(m, "iat") })),
		"expired":            handMade(hs256Header, claims(func(m map[string]any) { m["exp"] = iat - 1 })),
		"not yet valid":      handMade(hs256Header, claims(func(m map[string]any) { m["nbf"] = exp })),
		"no userId":          handMade(hs256Header, claims(func(m map[string]any) { delete(m, "userId") })),
		"no organizationId":  handMade(hs256Header, claims(func(m map[string]any) { m["organizationId"] = "" })),
		"unknown role":       handMade(hs256Header, claims(func(m map[string]any) { m["role"] = "owner" })),
		"userId not string":  handMade(hs256Header, claims(func(m map[string]any) { m["userId"] = 7 })),
		"oversized":          handMade(hs256Header, claims(func(m map[string]any) { m["pad"] = strings.Repeat("x", maxTokenBytes) })),
	}
	for name, token := range cases {
		c, err := tk.Verify(token)
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindUnauthorized {
			t.Errorf("%s: Verify = %+v, %v; want a 401 error", name, c, err)
		}
	}
}

func TestNewTokensAndIssueRefuse(t *testing.T) {
	if _, err := NewTokens(testSecret[:MinSecretBytes-1], 0, newTestClock().Now); err == nil {
		t.Error("short secret accepted")
	}
	if _, err := NewTokens(testSecret, -time.Second, newTestClock().Now); err == nil {
		t.Error("negative lifetime accepted")
	}
	tk, _ := newTokens(t, 0)
	for _, c := range []struct {
		user, org string
		role      domain.Role
	}{{"", "o", domain.RoleAdmin}, {"u", "", domain.RoleAdmin}, {"u", "o", "owner"}} {
		if _, err := tk.Issue(c.user, c.org, c.role); err == nil {
			t.Errorf("Issue(%q, %q, %q) succeeded", c.user, c.org, c.role)
		}
	}
}

// FuzzVerify: whatever the input, Verify does not panic, and it accepts only tokens whose
// header says HS256 and whose canonical signature is the test secret's HMAC of the rest.
func FuzzVerify(f *testing.F) {
	tk, clock := newTokens(f, 0)
	good, _ := tk.Issue("u1", "o1", domain.RoleViewer)
	iat := clock.Now().Unix()
	f.Add(good)
	f.Add(handMade(map[string]any{"alg": "RS256"}, map[string]any{"userId": "u", "organizationId": "o", "role": "admin", "iat": iat, "exp": iat + 60}))
	f.Add(handMade(map[string]any{"alg": "none"}, map[string]any{"userId": "u", "organizationId": "o", "role": "admin", "iat": iat, "exp": iat + 60}))
	f.Add(good[:strings.LastIndexByte(good, '.')+1])
	f.Add(good[:len(good)-4] + "\n" + good[len(good)-4:])
	for _, s := range []string{"", ".", "..", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.e30.", strings.Repeat("A", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		c, err := tk.Verify(token)
		if err != nil {
			return
		}
		parts := strings.Split(token, ".")
		if len(parts) != 3 {
			t.Fatalf("accepted %q with %d segments", token, len(parts))
		}
		hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
		var h struct{ Alg string }
		if json.Unmarshal(hb, &h) != nil || h.Alg != "HS256" {
			t.Fatalf("accepted %q whose header is %q", token, hb)
		}
		if parts[2] != hs256(parts[0]+"."+parts[1]) {
			t.Fatalf("accepted %q, not signed by the secret", token)
		}
		if c.UserID == "" || c.OrganizationID == "" || !c.Role.Valid() {
			t.Fatalf("accepted %q with claims %+v", token, c)
		}
	})
}

// TestVerifiedTokensCache: a token verified once is served from the cache until it expires,
// the cache stays bounded, and a changed token is verified afresh.
func TestVerifiedTokensCache(t *testing.T) {
	tk, clock := newTokens(t, time.Hour)
	token, err := tk.Issue("u1", "o1", domain.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(token); err != nil {
		t.Fatal(err)
	}
	if _, ok := tk.verified[token]; !ok {
		t.Fatal("a verified token was not kept")
	}
	last := token[len(token)-1]
	tampered := token[:len(token)-1] + string("AB"[(strings.IndexByte("AB", last)+1)%2])
	if _, err := tk.Verify(tampered); err == nil {
		t.Fatal("a token with another signature verified")
	}
	if _, ok := tk.verified[tampered]; ok {
		t.Fatal("a refused token was kept")
	}
	for i := range maxVerifiedTokens + 10 {
		other, err := tk.Issue("u"+strings.Repeat("x", i%7), "o1", domain.RoleViewer)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond) // distinct iat, so distinct tokens, some of them
		_, _ = tk.Verify(other)
	}
	if n := len(tk.verified); n > maxVerifiedTokens {
		t.Fatalf("%d tokens kept, bound %d", n, maxVerifiedTokens)
	}
	clock.Advance(time.Hour)
	tk.verified[token] = Claims{UserID: "u1", OrganizationID: "o1", Role: domain.RoleViewer, ExpiresAt: clock.Now().Add(-time.Second)}
	if _, err := tk.Verify(token); err == nil {
		t.Fatal("an expired token verified from the cache")
	}
}

func BenchmarkVerify(b *testing.B) {
	tk, _ := newTokens(b, 0)
	token, err := tk.Issue("65f0c2a1b3d4e5f601234567", "65f0c2a1b3d4e5f601234568", domain.RoleDeveloper)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := tk.Verify(token); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parsed", func(b *testing.B) {
		for b.Loop() {
			if _, err := tk.verify(token); err != nil {
				b.Fatal(err)
			}
		}
	})
}
