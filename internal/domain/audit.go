package domain

import (
	"context"
	"strings"
	"time"
)

// AuditFilter selects audit entries: by actor (a user ID), by action (exact, or a prefix when
// it ends in "*": "user.*"), by time (Since inclusive, Until exclusive; zero: unbounded), and a
// page (Limit <= 0: no limit). Entries come newest first.
type AuditFilter struct {
	ActorID string
	Action  string
	Since   time.Time
	Until   time.Time
	Limit   int
	Offset  int
}

// ActionPrefix reports the prefix an action filter ending in "*" selects.
func (f AuditFilter) ActionPrefix() (string, bool) {
	return strings.CutSuffix(f.Action, "*")
}

// The audit log's actors of changes no member made.
const (
	// AuditOperator made a change by an operator's command (verdict admin).
	AuditOperator = "operator:verdict-admin"
	// AuditPaymentProvider changed a plan through the payment provider's webhook.
	AuditPaymentProvider = "billing:payment-provider"
	// AuditSystem made a change from a background job (the erasure of an organization).
	AuditSystem = "system"
)

type clientIPKey struct{}

// WithClientIP returns ctx carrying the address of the request being served, for the audit
// entries the request's changes write.
func WithClientIP(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, clientIPKey{}, ip)
}

// ClientIP is the address WithClientIP put in ctx, or "".
func ClientIP(ctx context.Context) string {
	ip, _ := ctx.Value(clientIPKey{}).(string)
	return ip
}
