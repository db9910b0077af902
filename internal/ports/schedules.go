package ports

import (
	"context"

	"verdict/internal/identity"
	"verdict/internal/schedules"
)

// Schedules are projects' schedules as the front doors call them (the schedules service):
// every member reads, admins and developers write.
type Schedules interface {
	List(ctx context.Context, p *identity.Principal, projectID string) ([]schedules.View, error)
	Get(ctx context.Context, p *identity.Principal, projectID, id string) (*schedules.View, error)
	Create(ctx context.Context, p *identity.Principal, projectID string, in schedules.Input) (*schedules.View, error)
	Update(ctx context.Context, p *identity.Principal, projectID, id string, in schedules.Input) (*schedules.View, error)
	Delete(ctx context.Context, p *identity.Principal, projectID, id string) error
}

var _ Schedules = (*schedules.Service)(nil)
