package auth

import (
	"errors"
	"testing"
	"time"

	"verdict/internal/domain"
)

// Every token gets its own random ID; a revoked one is refused (from the verified cache too)
// while the user's other tokens keep working; an expired revocation is forgotten, and a token
// without a jti (issued before tokens had one) still verifies, named by a hash of itself, and
// can be revoked too.
func TestRevokedTokens(t *testing.T) {
	tk, clock := newTokens(t, time.Hour)
	a, _ := tk.Issue("u1", "o1", domain.RoleDeveloper)
	b, _ := tk.Issue("u1", "o1", domain.RoleDeveloper)
	ca, err := tk.Verify(a) // now in the verified cache
	if err != nil {
		t.Fatal(err)
	}
	cb, err := tk.Verify(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ca.ID) != 26 || ca.ID == cb.ID {
		t.Fatalf("token IDs %q and %q: want two different random IDs", ca.ID, cb.ID)
	}
	if !tk.Revoke(ca.ID, ca.ExpiresAt) || tk.Revoke(ca.ID, ca.ExpiresAt) {
		t.Fatal("Revoke does not tell a new revocation from a known one")
	}
	_, err = tk.Verify(a)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindUnauthorized || de.Code != "Invalid or expired token" {
		t.Fatalf("a revoked token: %v, want 401 Invalid or expired token", err)
	}
	if !tk.Revoked(ca.ID) || tk.Revoked(cb.ID) || tk.Revoked("") {
		t.Fatal("Revoked is wrong")
	}
	if _, err := tk.Verify(b); err != nil {
		t.Fatalf("the user's other token: %v", err)
	}
	// A revocation is for the token's life: a fresh verifier (another replica) that is told
	// refuses the token before its cache holds it.
	other, err := NewTokens(testSecret, time.Hour, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	other.Revoke(ca.ID, ca.ExpiresAt)
	if _, err := other.Verify(a); err == nil {
		t.Fatal("a revoked token verified on a verifier that never saw it")
	}
	if tk.Revoke("x", clock.Now()) {
		t.Fatal("revoked a session that has already expired")
	}

	// A token without a jti keeps working until revoked.
	legacy := handMade(map[string]any{"alg": "HS256", "typ": "JWT"}, map[string]any{"userId": "u1", "organizationId": "o1",
		"role": "viewer", "iat": clock.Now().Unix(), "exp": clock.Now().Add(time.Hour).Unix()})
	cl, err := tk.Verify(legacy)
	if err != nil {
		t.Fatalf("a token without a jti: %v", err)
	}
	if cl.ID != legacyID(legacy) || len(cl.ID) != 24 {
		t.Fatalf("the ID of a token without a jti: %q", cl.ID)
	}
	tk.Revoke(cl.ID, cl.ExpiresAt)
	if _, err := tk.Verify(legacy); err == nil {
		t.Fatal("a revoked token without a jti verified")
	}

	// Expired revocations are dropped once the set grows.
	clock.Advance(time.Hour)
	for i := range minPruneAt + 1 {
		tk.Revoke(domain.RandomHex(8)+string(rune('a'+i%26)), clock.Now().Add(time.Minute))
	}
	tk.mu.RLock()
	_, kept := tk.revoked[ca.ID]
	n := len(tk.revoked)
	tk.mu.RUnlock()
	if kept || n > minPruneAt+1 {
		t.Fatalf("after expiry: %d revocations kept, the expired one kept: %v", n, kept)
	}
}

// BenchmarkVerifyRevocations is BenchmarkVerify's cached path with 10,000 sessions revoked (a
// busy day's sign-outs): the revocation check is one map lookup under the cache's read lock.
func BenchmarkVerifyRevocations(b *testing.B) {
	tk, clock := newTokens(b, 0)
	token, err := tk.Issue("65f0c2a1b3d4e5f601234567", "65f0c2a1b3d4e5f601234568", domain.RoleDeveloper)
	if err != nil {
		b.Fatal(err)
	}
	for range 10000 {
		tk.Revoke(domain.RandomHex(13), clock.Now().Add(time.Hour))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.Verify(token); err != nil {
			b.Fatal(err)
		}
	}
}
