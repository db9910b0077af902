package httpkind

import (
	"testing"

	"verdict/internal/domain"
)

// Every kind the domain has is answered with the status the API has always given it.
func TestStatus(t *testing.T) {
	for _, c := range []struct {
		err  *domain.Error
		want int
	}{
		{domain.BadRequest("c", "m"), 400},
		{domain.Unauthorized("c", "m"), 401},
		{domain.Forbidden("c", "m"), 403},
		{domain.NotFound("c", "m"), 404},
		{domain.Conflict("c", "m"), 409},
		{domain.TooMany("c", "m"), 429},
		{domain.Internal("c", "m"), 500},
		{domain.Upstream("c", "m"), 502},
		{domain.Unavailable("c", "m"), 503},
		{domain.UpstreamTimeout("c", "m"), 504},
		{domain.Gone("c", "m"), 410},
		{&domain.Error{Code: "no kind"}, 500},
		{&domain.Error{Kind: 200, Code: "unknown kind"}, 500},
	} {
		if got := Status(c.err.Kind); got != c.want {
			t.Errorf("%v: status %d, want %d", c.err, got, c.want)
		}
	}
}
