package ports

import (
	"context"
	"net/http"

	"verdict/internal/identity"
	"verdict/internal/scm"
)

// SourceControl is the source-control service: the organization's token per host (github,
// gitlab), projects' inbound hooks, and the hooks' deliveries.
type SourceControl interface {
	Settings(ctx context.Context, p *identity.Principal, provider string) (*scm.Settings, error)
	Save(ctx context.Context, p *identity.Principal, provider string, in scm.SaveInput) (*scm.Settings, error)
	CreateHook(ctx context.Context, p *identity.Principal, projectID string, in scm.HookInput) (*scm.CreatedHook, error)
	ListHooks(ctx context.Context, p *identity.Principal, projectID string) ([]scm.HookInfo, error)
	DeleteHook(ctx context.Context, p *identity.Principal, projectID, hookID string) error
	Receive(ctx context.Context, provider, hookID string, header http.Header, body []byte) (*scm.Receipt, error)
}

var _ SourceControl = (*scm.Service)(nil)
