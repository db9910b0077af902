// Package httpkind answers a domain.Error over HTTP: the status of each kind. It is the one
// table of them; the API (api.statusOf, for its JSON error body) and the dashboard (web's
// statusOf, for its error pages and form refusals) each read it in one place.
package httpkind

import (
	"net/http"

	"verdict/internal/domain"
)

var statuses = [...]int{
	domain.KindInternal:        http.StatusInternalServerError,
	domain.KindInvalid:         http.StatusBadRequest,
	domain.KindUnauthorized:    http.StatusUnauthorized,
	domain.KindForbidden:       http.StatusForbidden,
	domain.KindNotFound:        http.StatusNotFound,
	domain.KindConflict:        http.StatusConflict,
	domain.KindRateLimited:     http.StatusTooManyRequests,
	domain.KindUpstream:        http.StatusBadGateway,
	domain.KindUpstreamTimeout: http.StatusGatewayTimeout,
	domain.KindUnavailable:     http.StatusServiceUnavailable,
	domain.KindGone:            http.StatusGone,
	domain.KindTooLarge:        http.StatusRequestEntityTooLarge,
}

// Status is the HTTP status that answers an error of kind k; 500 for a kind it does not know.
func Status(k domain.Kind) int {
	if int(k) < len(statuses) && statuses[k] != 0 {
		return statuses[k]
	}
	return http.StatusInternalServerError
}
