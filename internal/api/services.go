package api

import (
	"context"
	"time"

	"verdict/internal/identity"
)

// The services the API calls are declared once for both front doors, in internal/ports; the
// interfaces here are the API's own.

// Runners lists the remote runners heard from (app.runnerList over peerhttp.Server). The
// runners are shared by every organization, so a tenant sees nothing of another's load: to
// an organization's admin (ListRunners) a runner's Busy counts that organization's runs only;
// the whole picture (ListAllRunners) is for the runners' operator, who presents the runner
// secret (Operator).
type Runners interface {
	// ListRunners lists the runners for p, an admin (else Forbidden): Busy counts p's
	// organization's runs going on each.
	ListRunners(ctx context.Context, p *identity.Principal) ([]RunnerInfo, error)
	// Operator reports whether token is the runner secret (compared in constant time).
	Operator(token string) bool
	// ListAllRunners lists the runners as they report themselves: Busy counts every
	// organization's runs.
	ListAllRunners(ctx context.Context) ([]RunnerInfo, error)
}

// RunnerInfo is a remote runner as GET /api/runners shows it.
type RunnerInfo struct {
	ID         string
	Name       string
	Backend    string
	Slots      int
	Busy       int
	LastSeenAt time.Time
}
