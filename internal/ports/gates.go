package ports

import (
	"context"

	"verdict/internal/domain"
	"verdict/internal/history"
	"verdict/internal/identity"
)

// Gates are the release gates as the front doors call them (the history service): a project's
// quality-gate rules, and two runs compared.
type Gates interface {
	GateRules(ctx context.Context, p *identity.Principal, projectID string) (*domain.GateRules, error)
	SetGateRules(ctx context.Context, p *identity.Principal, projectID string, r domain.GateRules) (*domain.GateRules, error)
	Compare(ctx context.Context, p *identity.Principal, taskID, with string) (*history.Comparison, error)
}

var _ Gates = (*history.Service)(nil)
