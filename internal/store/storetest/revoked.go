package storetest

import (
	"testing"
	"time"

	"verdict/internal/store"
)

func revokedID(r store.RevokedToken) string { return r.ID }

// testRevokedTokens checks the revocation list replicas read incrementally: each revocation
// once, in the order recorded, above the seq a reader has seen, never a seq used twice (even
// after the newest rows were deleted), and expired ones neither read nor kept.
func testRevokedTokens(t *testing.T, open Opener) {
	t.Run("AddSince", func(t *testing.T) {
		f := setup(t, open)
		r := f.s.RevokedTokens()
		exp := base.Add(24 * time.Hour)
		must(t, r.Add(f.ctx, "jti-a", exp, base))
		must(t, r.Add(f.ctx, "jti-b", exp.Add(time.Hour), base.Add(time.Second)))
		must(t, r.Add(f.ctx, "jti-a", exp.Add(5*time.Hour), base.Add(time.Minute))) // again: nothing changes
		got, err := r.Since(f.ctx, 0, base, 100)
		must(t, err)
		equal(t, "Since(0)", ids(got, revokedID), []string{"jti-a", "jti-b"})
		if len(got) != 2 {
			return
		}
		if got[0].Seq <= 0 || got[1].Seq <= got[0].Seq {
			t.Errorf("seqs %d, %d: want increasing from 1", got[0].Seq, got[1].Seq)
		}
		equal(t, "first row", got[0], store.RevokedToken{Seq: got[0].Seq, ID: "jti-a", ExpiresAt: exp, RevokedAt: base})
		later, err := r.Since(f.ctx, got[0].Seq, base, 100)
		must(t, err)
		equal(t, "Since(first)", ids(later, revokedID), []string{"jti-b"})
		none, err := r.Since(f.ctx, got[1].Seq, base, 100)
		must(t, err)
		equal(t, "Since(last)", len(none), 0)
		one, err := r.Since(f.ctx, 0, base, 1)
		must(t, err)
		equal(t, "limit 1", ids(one, revokedID), []string{"jti-a"})
		// At exp jti-a has expired: only jti-b is still to be refused.
		live, err := r.Since(f.ctx, 0, exp, 100)
		must(t, err)
		equal(t, "Since(0) at the first expiry", ids(live, revokedID), []string{"jti-b"})
	})

	t.Run("DeleteExpired", func(t *testing.T) {
		f := setup(t, open)
		r := f.s.RevokedTokens()
		must(t, r.Add(f.ctx, "old", base.Add(time.Hour), base))
		must(t, r.Add(f.ctx, "newer", base.Add(2*time.Hour), base))
		must(t, r.Add(f.ctx, "live", base.Add(48*time.Hour), base))
		n, err := r.DeleteExpired(f.ctx, base.Add(2*time.Hour))
		must(t, err)
		equal(t, "deleted", n, 2)
		got, err := r.Since(f.ctx, 0, base, 100)
		must(t, err)
		equal(t, "left", ids(got, revokedID), []string{"live"})
		// The newest row deleted, a new one still gets a higher seq than any before.
		must(t, r.Add(f.ctx, "last", base.Add(3*time.Hour), base))
		got, err = r.Since(f.ctx, 0, base, 100)
		must(t, err)
		equal(t, "with the newest", ids(got, revokedID), []string{"live", "last"})
		lastSeq := got[len(got)-1].Seq
		n, err = r.DeleteExpired(f.ctx, base.Add(3*time.Hour))
		must(t, err)
		equal(t, "deleted the newest", n, 1)
		must(t, r.Add(f.ctx, "after", base.Add(4*time.Hour), base))
		got, err = r.Since(f.ctx, 0, base, 100)
		must(t, err)
		equal(t, "after deleting the newest", ids(got, revokedID), []string{"live", "after"})
		if len(got) == 2 && got[1].Seq <= lastSeq {
			t.Errorf("seq %d after the deleted newest row's %d: a seq was used twice", got[1].Seq, lastSeq)
		}
		n, err = r.DeleteExpired(f.ctx, base)
		must(t, err)
		equal(t, "nothing expired", n, 0)
	})

	t.Run("InTx", func(t *testing.T) {
		f := setup(t, open)
		must(t, f.s.InTx(f.ctx, func(tx store.Store) error {
			return tx.RevokedTokens().Add(f.ctx, "in-tx", base.Add(time.Hour), base)
		}))
		got, err := f.s.RevokedTokens().Since(f.ctx, 0, base, 100)
		must(t, err)
		equal(t, "committed", ids(got, revokedID), []string{"in-tx"})
	})
}
