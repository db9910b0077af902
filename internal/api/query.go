package api

import (
	"net/url"
	"strconv"

	"verdict/internal/domain"
)

// query reads a listing's query parameters and keeps the first refusal, for one 400.
type query struct {
	v   url.Values
	bad *domain.Error
}

// int is the parameter name as an integer from lo to hi; def when it is absent.
func (q *query) int(name string, def, lo, hi int) int {
	v := q.v.Get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if (err != nil || n < lo || n > hi) && q.bad == nil {
		q.bad = domain.BadRequest("Validation error", name+" must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
	}
	return n
}

// flag is the parameter name as true or false; false when it is absent.
func (q *query) flag(name string) bool {
	switch q.v.Get(name) {
	case "", "false":
		return false
	case "true":
		return true
	}
	if q.bad == nil {
		q.bad = domain.BadRequest("Validation error", name+" must be true or false")
	}
	return false
}
