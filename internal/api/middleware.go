package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/ratelimit"
)

// access says who may call a route.
type access int

const (
	public      access = iota // no credentials
	bearer                    // a JWT only
	bearerOrKey               // a JWT or an API key (acting as its owner, with the owner's current role)
)

// limitKey says what a rate limit counts by.
type limitKey int

const (
	byIP limitKey = iota
	byOrg
	// byUserOrKey counts by user, or by API key for what a key opens: the Socket.IO hub's
	// bucket (app hands it to internal/realtime), never a route's.
	byUserOrKey
)

// Rule is one rate limit, counted in bucket Name: Limit requests per Window by GCRA (a full
// bucket allows Limit at once, then one request every Window/Limit).
type Rule struct {
	Name   string
	Limit  int
	Window time.Duration
	Key    limitKey
}

// RateLimits are the rate-limit buckets, by name (docs/openapi.yaml, "Rate limits").
type RateLimits map[string]Rule

// DefaultRateLimits returns the limits the API reference documents.
func DefaultRateLimits() RateLimits {
	m := time.Minute
	return RateLimits{
		"signup":             {Limit: 5, Window: m, Key: byIP},
		"login":              {Limit: 5, Window: m, Key: byIP},
		"me":                 {Limit: 100, Window: m, Key: byOrg},
		"logout":             {Limit: 100, Window: m, Key: byOrg},
		"invite":             {Limit: 5, Window: m, Key: byOrg},
		"invitations":        {Limit: 100, Window: m, Key: byOrg},
		"invitations-public": {Limit: 100, Window: m, Key: byIP},
		"api":                {Limit: 100, Window: m, Key: byOrg},
		"strict":             {Limit: 10, Window: m, Key: byOrg},
		// CI polls run status, so runs get a bucket of their own above the
		// general API tier.
		"executions": {Limit: 300, Window: m, Key: byOrg},
		// The payment provider delivers bursts (e.g. after an outage) from a
		// few addresses; it retries what is refused.
		"webhooks": {Limit: 600, Window: m, Key: byIP},
		// Socket.IO: new sessions by client IP, before any other work is done for them, and
		// authenticated sockets by user or API key (a dashboard page opens one per view).
		"socket-ip": {Limit: 120, Window: m, Key: byIP},
		"socket":    {Limit: 60, Window: m, Key: byUserOrKey},
	}
}

type ctxKey int

const principalKey ctxKey = 0

func principalFrom(r *http.Request) *identity.Principal {
	p, _ := r.Context().Value(principalKey).(*identity.Principal)
	return p
}

// routeOpts describe a route's access and rate-limit bucket. A route holds no role: the
// service behind it decides what the caller's role allows.
type routeOpts struct {
	access access
	limit  string // bucket name in RateLimits; "" = none
	// operator, when set, serves a request whose bearer token is the runner secret
	// (Runners.Operator) in place of the route's own chain: the runners' operator is no user of
	// any organization, so neither authentication nor an organization's rate limit applies.
	operator http.HandlerFunc
}

// handle registers pattern with the middleware its options ask for, outermost first:
// authentication, then the rate limit (keyed by organization, or by client IP on public
// routes).
func (s *Server) handle(pattern string, o routeOpts, h http.HandlerFunc) {
	s.patterns = append(s.patterns, pattern)
	next := h
	if o.limit != "" {
		rule, ok := s.limits[o.limit]
		if !ok {
			panic("api: no rate limit named " + o.limit)
		}
		rule.Name = o.limit
		if rule.Key == byUserOrKey {
			panic("api: rate limit " + o.limit + " is the Socket.IO hub's, not a route's: " + pattern)
		}
		next = s.rateLimit(rule, next)
		if rule.Key == byOrg && o.access == public {
			panic("api: an organization-keyed limit on a public route: " + pattern)
		}
	}
	if o.access != public {
		next = s.authenticate(o.access == bearerOrKey, next)
	}
	if o.operator != nil {
		next = s.operatorOr(o.operator, next)
	}
	s.mux.HandleFunc(pattern, next)
}

// operatorOr serves op when the request's bearer token is the runner secret, else next. The
// check hashes the token once; only routes with an operator view pay it.
func (s *Server) operatorOr(op, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && s.runners != nil &&
			!isAPIKey(token) && s.runners.Operator(token) {
			op(w, r)
			return
		}
		next(w, r)
	}
}

var (
	errInvalidToken  = domain.Unauthorized("Invalid or expired token", "The bearer token is invalid or expired")
	errKeyNotAllowed = domain.Forbidden("API key not allowed", "This route needs a bearer token from a signed-in user; API keys are for CI routes")
)

// principalOf resolves the caller from a bearer JWT or an x-api-key header, re-reading the
// user on every request: a deleted or suspended user is refused at once, a changed role
// applies at once. A revoked session token is refused like an expired one.
func (s *Server) principalOf(r *http.Request) (*identity.Principal, error) {
	if authz := r.Header.Get("Authorization"); authz != "" {
		token, found := strings.CutPrefix(authz, "Bearer ")
		if !found || token == "" {
			return nil, errInvalidToken
		}
		if isAPIKey(token) { // authenticate lets it through only where keys are allowed
			return s.identity.AuthenticateKey(r.Context(), token)
		}
		claims, err := s.jwt.Verify(token) // a revoked token fails here, as an expired one
		if err != nil {
			return nil, errInvalidToken
		}
		p, err := s.identity.AuthenticateClaims(r.Context(), claims.UserID, claims.OrganizationID)
		if err != nil {
			return nil, err
		}
		p.SessionID, p.SessionExpires = claims.ID, claims.ExpiresAt
		return p, nil
	}
	if key := r.Header.Get("X-Api-Key"); key != "" {
		return s.identity.AuthenticateKey(r.Context(), key)
	}
	return nil, identity.ErrAuthRequired()
}

// isAPIKey tells an API key (pk_live_…) sent as a bearer token from a JWT.
func isAPIKey(token string) bool { return strings.HasPrefix(token, domain.APIKeyPrefix) }

// bearerKey reports a request whose Authorization header carries an API key.
func bearerKey(r *http.Request) bool {
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return found && isAPIKey(token)
}

// authenticate puts the caller in the request's context, refusing API keys where they are not
// allowed: on a bearer-only route, a request with only an x-api-key, or with an API key as its
// bearer token, answers 403.
func (s *Server) authenticate(keysAllowed bool, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !keysAllowed && (r.Header.Get("Authorization") == "" && r.Header.Get("X-Api-Key") != "" || bearerKey(r)) {
			writeDomainError(w, errKeyNotAllowed)
			return
		}
		p, err := s.principalOf(r)
		if err != nil {
			s.fail(w, r, err, "Authentication failed")
			return
		}
		if rec, ok := w.(*statusRecorder); ok {
			rec.orgID = p.OrgID // for the access log
		}
		// The client's address rides with the principal, for the audit entries of its changes.
		ctx := domain.WithClientIP(context.WithValue(r.Context(), principalKey, p), clientIP(r, s.proxies))
		next(w, r.WithContext(ctx))
	}
}

// rateLimit takes the request from its bucket, sets the X-RateLimit headers, and answers 429
// when the bucket is empty. A limiter failure lets the request through (logged): an outage of
// Redis must not take the API down with it.
func (s *Server) rateLimit(rule Rule, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d, ok := take(s.limiter, s.proxies, s.log, rule, r, principalFrom(r))
		if !ok {
			next(w, r)
			return
		}
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
		// Reset is when the bucket is full again, rounded up to a whole second so that it surely
		// is by then; Retry-After is rounded up likewise, and never 0.
		h.Set("X-RateLimit-Reset", strconv.FormatInt(d.ResetAt.Add(time.Second-time.Nanosecond).Unix(), 10))
		if !d.Allowed {
			secs := retrySeconds(d.RetryAfter)
			h.Set("Retry-After", strconv.Itoa(secs))
			writeDomainError(w, errRateLimited(secs))
			return
		}
		next(w, r)
	}
}

// take draws r from the bucket of rule: the one way a request is counted, by the API's routes
// and by the dashboard's actions (FormLimit) alike, so that a bucket is one counter whichever
// door a request comes in by. The counter is the organization's of p for an
// organization-keyed bucket, else the client IP's. ok is false when the limiter failed: the
// request goes through, logged.
func take(l *ratelimit.Limiter, proxies []netip.Prefix, log *slog.Logger, rule Rule, r *http.Request, p *identity.Principal) (d ratelimit.Decision, ok bool) {
	var key string
	if rule.Key == byOrg {
		key = "rl:" + rule.Name + ":org:" + p.OrgID
	} else {
		key = "rl:" + rule.Name + ":ip:" + clientIP(r, proxies)
	}
	d, err := l.Allow(r.Context(), key, rule.Limit, rule.Window)
	if err != nil {
		log.Warn("rate limiter unavailable; request let through", "bucket", rule.Name, "err", err)
		return d, false
	}
	return d, true
}

func retrySeconds(d time.Duration) int { return max(int((d+time.Second-1)/time.Second), 1) }

func errRateLimited(secs int) *domain.Error {
	return domain.TooMany("Rate limit exceeded",
		fmt.Sprintf("Too many requests; try again in %d seconds", secs)).With("retryAfter", secs)
}

// FormLimit returns the rate limit of the dashboard's pages, which do what the API's routes do:
// a page's action names the bucket of the route doing the same (the invitation form the
// "invite" of POST /api/invitations, the sign-in form "login"), and takes from the same
// counter under the same key (the organization of p, the signed-in caller, or the client IP
// for a public bucket), so a page is no way around the route's limit, nor the route around the
// page's. The function answers the route's 429 error (with retryAfter) when the bucket is
// empty, and nil otherwise (a limiter failure lets the request through, logged, as on the
// routes). It panics on a bucket that does not exist, or on an organization-keyed bucket
// without a caller: both are mistakes of the page. limits nil: DefaultRateLimits.
func FormLimit(l *ratelimit.Limiter, limits RateLimits, proxies []netip.Prefix, log *slog.Logger) func(r *http.Request, bucket string, p *identity.Principal) error {
	if limits == nil {
		limits = DefaultRateLimits()
	}
	if log == nil {
		log = slog.Default()
	}
	return func(r *http.Request, bucket string, p *identity.Principal) error {
		rule, ok := limits[bucket]
		if !ok {
			panic("api: no rate limit named " + bucket)
		}
		if rule.Key == byOrg && p == nil {
			panic("api: an organization-keyed limit without a caller: " + bucket)
		}
		rule.Name = bucket
		if d, ok := take(l, proxies, log, rule, r, p); ok && !d.Allowed {
			return errRateLimited(retrySeconds(d.RetryAfter))
		}
		return nil
	}
}

// statusRecorder remembers the status, and the caller's organization once authenticated, for
// the access log and the metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
	orgID  string // set by authenticate
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer (flushing, hijacking for
// websockets).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Values of the baseline headers, shared by every answer (net/http only reads them).
var (
	nosniff    = []string{"nosniff"}
	noReferrer = []string{"no-referrer"}
	deny       = []string{"DENY"}
)

// outer wraps the whole mux: a request ID, panic recovery into a JSON 500, baseline security
// headers, the request's metrics, and an info-level access log line: method, route pattern,
// status, duration, organization (when the API authenticated the caller) and request ID. The
// path and query are never logged: report links carry a token in both, invitations in the
// path, so the line names the route pattern instead; no header (credentials, cookies) is.
func (s *Server) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		// The keys are in canonical form already: assigned directly, they skip Set's
		// canonicalisation, which was most of this middleware's cost.
		h := w.Header()
		id := requestID(r, s.proxies)
		h[requestIDHeader] = []string{id}
		h["X-Content-Type-Options"] = nosniff
		h["Referrer-Policy"] = noReferrer
		if !strings.HasPrefix(r.URL.Path, "/reports/") {
			h["X-Frame-Options"] = deny
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "method", r.Method, "route", routeOf(r), "request_id", id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeDomainError(rec, domain.Internal("Internal server error", "An internal error occurred; it has been logged"))
				}
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK // the handler wrote nothing: net/http answers 200
			}
			elapsed := time.Since(start)
			route := routeOf(r)
			s.observe.ObserveRequest(route, status, elapsed)
			if s.log.Enabled(r.Context(), slog.LevelInfo) {
				attrs := [7]slog.Attr{slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
					slog.Float64("duration_ms", durationMillis(elapsed)), slog.String("request_id", id)}
				n := 5
				if rec.orgID != "" {
					attrs[n] = slog.String("org", rec.orgID)
					n++
				}
				s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs[:n]...)
			}
		}()
		next.ServeHTTP(rec, r)
	})
}
