package ports

import (
	"context"

	"verdict/internal/custody"
	"verdict/internal/identity"
)

// Custody is an organization's data in its admins' hands (the custody service): the export,
// and the erasure an admin schedules or cancels.
type Custody interface {
	Export(ctx context.Context, p *identity.Principal, sink custody.Sink) error
	ScheduleErase(ctx context.Context, p *identity.Principal, confirm string) (*custody.Erasure, error)
	CancelErase(ctx context.Context, p *identity.Principal) error
}

var _ Custody = (*custody.Service)(nil)
