package ports

import (
	"context"

	"verdict/internal/identity"
	"verdict/internal/notify"
)

// Notifications are a project's notifications as the front doors call them (the notifications'
// service): listed and their deliveries read by every member, created, deleted and redelivered
// by admins.
type Notifications interface {
	List(ctx context.Context, p *identity.Principal, projectID string) ([]notify.View, error)
	Create(ctx context.Context, p *identity.Principal, projectID string, in notify.Input) (*notify.Created, error)
	Delete(ctx context.Context, p *identity.Principal, projectID, nid string) error
	Deliveries(ctx context.Context, p *identity.Principal, projectID, nid string) ([]notify.DeliveryView, error)
	Redeliver(ctx context.Context, p *identity.Principal, projectID, nid, did string) (*notify.DeliveryView, error)
}

var _ Notifications = (*notify.Service)(nil)
