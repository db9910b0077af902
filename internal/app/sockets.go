package app

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"verdict/internal/api"
	"verdict/internal/config"
	"verdict/internal/ratelimit"
	"verdict/internal/realtime"
)

// socketBounds are the Socket.IO hub's bounds from the configuration's limits (sockets per
// user, API key and organization; bytes queued per connection and in all), and its rate limits:
// the API's limiter with the API's buckets socket-ip (new sessions, by client IP, through the
// trusted proxies, as the API's per-IP buckets count it) and socket (authenticated sockets, by
// user or API key), which VERDICT_RATE_LIMITS overrides like any other (limits). As on the API's
// routes, a limiter failure lets the connection through, logged.
func socketBounds(cfg config.Limits, proxies []netip.Prefix, limits api.RateLimits, limiter *ratelimit.Limiter, log *slog.Logger) realtime.Options {
	return realtime.Options{
		SocketsPerUser: cfg.SocketsPerUser,
		SocketsPerOrg:  cfg.SocketsPerOrg,
		QueueBytes:     int64(cfg.SocketQueueMB) << 20,
		QueueTotal:     int64(cfg.SocketQueueTotalMB) << 20,
		ClientIP:       func(r *http.Request) string { return api.ClientIP(r, proxies) },
		RateLimit: func(ctx context.Context, bucket, key string) (bool, time.Duration) {
			rule, ok := limits[bucket]
			if !ok {
				return true, 0
			}
			d, err := limiter.Allow(ctx, "rl:"+bucket+":"+key, rule.Limit, rule.Window)
			if err != nil {
				log.Warn("rate limiter unavailable; socket let through", "bucket", bucket, "err", err)
				return true, 0
			}
			return d.Allowed, d.RetryAfter
		},
	}
}
