package ports

import (
	"context"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/sso"
)

// SSO is sign-in through organizations' OpenID Connect providers as the front doors call it
// (the single sign-on service): the admins' setting (API and dashboard), and the browser's
// flow (the dashboard's sign-in page, /auth/sso and its callback).
type SSO interface {
	Get(ctx context.Context, p *identity.Principal) (*sso.View, error)
	Put(ctx context.Context, p *identity.Principal, in sso.Input) (*sso.View, error)
	Lookup(ctx context.Context, email string) (*domain.SSOConfig, string, error)
	Begin(ctx context.Context, email string) (*sso.Start, error)
	Finish(ctx context.Context, cb sso.Callback) (*identity.Session, error)
}

var _ SSO = (*sso.Service)(nil)
