package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/auth"
	"verdict/internal/domain"
	"verdict/internal/follow"
	"verdict/internal/identity"
	"verdict/internal/ports"
	"verdict/internal/ratelimit"
)

// revokedAfterOne verifies a token once (the middleware's check), then refuses it, as when the
// session is signed out while the request is being authenticated.
type revokedAfterOne struct{ calls atomic.Int32 }

func (v *revokedAfterOne) Verify(token string) (auth.Claims, error) {
	if v.calls.Add(1) > 1 {
		return auth.Claims{}, errors.New("revoked")
	}
	return auth.Claims{ID: "s1", UserID: token, OrganizationID: testOrg, Role: testRoles[token]}, nil
}

// pendingRun is every run: pending, of the caller's organization.
type pendingRun struct{ ports.Executions }

func (pendingRun) Get(_ context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	return &domain.Execution{ID: "e1", TaskID: taskID, OrganizationID: p.OrgID, Status: domain.ExecPending, QueuedAt: testNow}, nil
}

// GetListed is Get for a handler that reads the run without its results.
func (r pendingRun) GetListed(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	return r.Get(ctx, p, taskID)
}

// An SSE stream whose session is revoked between the request's authentication and the
// stream's registration (where a revocation would have ended it) is refused, not left open
// until its next re-check.
func TestSSERevokedWhileOpening(t *testing.T) {
	f := follow.New(follow.Options{})
	defer f.Close()
	s := New(Deps{Identity: stubIdentity{}, Executions: pendingRun{}, Billing: stubBilling{}, JWT: &revokedAfterOne{}, Follow: f,
		Limiter: ratelimit.NewMemoryLimiter(domain.SystemClock), Log: slog.New(slog.DiscardHandler), Clock: func() time.Time { return testNow }})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/api/executions/t1/events", nil)
	r.Header.Set("Authorization", "Bearer dev-1")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 401 || ctx.Err() != nil {
		t.Fatalf("a stream revoked while opening: %d after %v: %s", w.Code, ctx.Err(), w.Body)
	}
	if st := f.Stats(); st.Followers != 0 {
		t.Fatalf("%d followers left", st.Followers)
	}
}
