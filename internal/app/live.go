package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"verdict/internal/api"
	"verdict/internal/domain"
	"verdict/internal/follow"
	"verdict/internal/identity"
	"verdict/internal/metrics"
	"verdict/internal/realtime"
	"verdict/internal/web"
)

// live builds what carries the runs' events to their watchers: the Socket.IO hub, the SSE
// followers' fan-out and the events both get, and the metrics that count their connections.
func (w *wiring) live(context.Context) error {
	cfg, o, st, clock, log, a := w.cfg, w.o, w.st, w.clock, w.log, w.a
	// The one construction cycle: the hub authenticates a socket's handshake through identity,
	// and identity ends a member's sockets through the hub. The hub comes first (the run
	// plane's events go through it, and identity counts runs through executions), so it gets
	// this function, which reaches identity once w.ids is set by services. Handshakes only
	// arrive once the API serves, after New has returned.
	// The dashboard's pages open their sockets with tickets (web.SocketTickets), not the JWT.
	w.tickets = web.NewSocketTickets(deriveKey(cfg.Secrets.JWTSecret, "verdict socket tickets"), clock)
	authenticate := func(ctx context.Context, token string) (realtime.Identity, error) {
		s, err := w.ids.AuthenticateSocket(ctx, token)
		if errors.Is(err, domain.ErrUnavailable) {
			err = fmt.Errorf("%w: %v", realtime.ErrUnavailable, err)
		}
		if err != nil {
			return realtime.Identity{}, err
		}
		p := s.Principal
		return realtime.Identity{UserID: p.UserID, OrganizationID: p.OrgID, Role: string(p.Role), APIKeyID: p.APIKeyID,
			ExpiresIn: s.ExpiresIn, SessionID: s.SessionID, Revoked: s.Revoked}, nil
	}
	hubOpts := socketBounds(cfg.Limits, cfg.Server.TrustedProxies, w.limits, w.limiter, log)
	hubOpts.Authenticate, hubOpts.RedisURL, hubOpts.RedisPrefix, hubOpts.Logger = authenticate, cfg.Database.RedisURL,
		strings.TrimSuffix(o.RedisPrefix, ":"), log
	hub, err := realtime.New(hubOpts)
	if err != nil {
		return fmt.Errorf("realtime: %w", err)
	}
	a.closers = append(a.closers, func() { hub.Close() })
	a.hub = hub
	w.hub = hub
	// The SSE followers' fan-out; with Redis, one channel carries the runs' events to every replica.
	followOpts := follow.Options{Log: log, BufferBytes: o.FollowBufferBytes}
	if a.redis != nil {
		followOpts.Transport = redisFollow{client: a.redis, channel: w.redisPrefix() + "follow"}
	}
	followers := follow.New(followOpts)
	a.closers = append(a.closers, followers.Close)
	a.Follow = followers
	w.followers = followers
	w.events = hubEvents{hub: hub, follow: followers, clock: clock, views: api.NewViews(cfg.Server.PublicURL, cfg.Reports.URL)}

	// Metrics: the run gauges and the mail backlog are counted in the database when scraped, so
	// every replica on one database reports the same truth; connections are this replica's.
	a.metrics = metrics.New(o.Version, metrics.Sources{Runs: st.Executions().ActiveCounts,
		MailBacklog: st.Outbox().Backlog, Connections: hub.Connections}, log)
	return nil
}

// socketTicket reads a handshake's token as a dashboard page's socket ticket, for identity.
func (w *wiring) socketTicket(token string) (identity.SocketTicket, bool, bool) {
	if !web.IsSocketTicket(token) {
		return identity.SocketTicket{}, false, false
	}
	t, ok := w.tickets.Verify(token)
	return identity.SocketTicket{UserID: t.UserID, OrgID: t.OrgID, SessionID: t.SessionID, SessionEnd: t.SessionEnd}, true, ok
}
