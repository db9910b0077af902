package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"verdict/internal/domain"
)

// Rate limits: a page action takes from the bucket of its API twin.

// limited takes r from the rate-limit bucket of the API route doing the same action, counted as
// the route counts it (by the signed-in caller's organization, or by client IP), and sets
// Retry-After on w when the bucket is empty: the error says when to try again.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, bucket string) error {
	if s.limit == nil {
		return nil
	}
	err := s.limit(r, bucket, stateOf(r).p)
	var de *domain.Error
	if errors.As(err, &de) {
		if secs, ok := de.Fields["retryAfter"].(int); ok {
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
	}
	return err
}

// takes serves a signed-in action after taking it from bucket, the rate-limit bucket of its
// API twin (limited): when the bucket is empty, the answer is a 429 that says when to try
// again and h does nothing. htmx swaps in no error answer, so to an htmx request the 429 sends
// the browser back to the page it is on (HX-Redirect) with the refusal as its flash message.
func (s *Server) takes(bucket string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := s.limited(w, r, bucket)
		if err == nil {
			h(w, r)
			return
		}
		var de *domain.Error
		if r.Header.Get("HX-Request") != "true" || !errors.As(err, &de) {
			s.fail(w, r, err)
			return
		}
		back := "/runs"
		if u, perr := url.Parse(r.Header.Get("HX-Current-URL")); perr == nil && localPath(u.RequestURI()) != "" {
			back = u.RequestURI()
		}
		s.setFlash(w, flash{Error: true, Text: de.Code + ": " + de.Message})
		w.Header().Set("HX-Redirect", back)
		w.WriteHeader(statusOf(de))
	}
}
