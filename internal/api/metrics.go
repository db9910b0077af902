package api

import (
	"math/rand/v2"
	"net/http"
	"net/netip"
	"time"

	"verdict/internal/domain"
)

// RequestMetrics records what the API observes (metrics.Metrics): every request, by route pattern and
// status, and the payment provider's webhook deliveries by outcome.
type RequestMetrics interface {
	ObserveRequest(route string, status int, elapsed time.Duration)
	WebhookOutcome(outcome string)
}

type noMetrics struct{}

func (noMetrics) ObserveRequest(string, int, time.Duration) {}
func (noMetrics) WebhookOutcome(string)                     {}

// unmatchedRoute is the route of a request no route pattern took.
const unmatchedRoute = "unmatched"

// routeOf is the request's ServeMux pattern once the mux has routed it ("GET
// /api/executions/{taskId}"), for logs and metrics: never the path, which can carry credentials
// (report links, invitations) and would make labels without end. The catch-all that answers an
// unknown /api/ route's JSON 404 counts as unmatched. Dashboard pages carry the pattern of the
// dashboard's own mux, which routes the same request.
func routeOf(r *http.Request) string {
	if r.Pattern == "" || r.Pattern == "/api/" {
		return unmatchedRoute
	}
	return r.Pattern
}

// serveMetrics is GET /metrics: the Prometheus exposition, behind its own bearer token when
// VERDICT_METRICS_TOKEN is set.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.metricsHandler == nil {
		writeDomainError(w, domain.NotFound("Not found", "Metrics are not served by this server"))
		return
	}
	s.metricsHandler.ServeHTTP(w, r)
}

// requestIDHeader carries a request's ID in the answer, and in from a trusted proxy.
const requestIDHeader = "X-Request-Id"

// requestID is the ID the access log and the answer carry: a trusted proxy's (VERDICT_TRUSTED_PROXIES)
// when it sent a well-formed one, else 16 random hex digits (not a secret: math/rand).
func requestID(r *http.Request, proxies []netip.Prefix) string {
	if len(proxies) > 0 {
		if id := r.Header.Get(requestIDHeader); id != "" && validRequestID(id) && fromTrustedProxy(r, proxies) {
			return id
		}
	}
	var b [16]byte
	v := rand.Uint64()
	const hex = "0123456789abcdef"
	for i := range b {
		b[i] = hex[v>>(60-4*i)&0xf]
	}
	return string(b[:])
}

func validRequestID(id string) bool {
	if len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func fromTrustedProxy(r *http.Request, proxies []netip.Prefix) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && isTrusted(ap.Addr().Unmap(), proxies)
}

// durationMillis is a duration in milliseconds with microseconds, for the access log.
func durationMillis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
