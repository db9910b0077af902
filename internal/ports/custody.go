package ports

import (
	"context"

	"verdict/internal/custody"
	"verdict/internal/identity"
)

// Custody is an organization's data in its admins' hands (the custody service): the export.
type Custody interface {
	Export(ctx context.Context, p *identity.Principal, sink custody.Sink) error
}

var _ Custody = (*custody.Service)(nil)
