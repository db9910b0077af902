package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

// auditPageSize is the entries a page of /settings/audit shows.
const auditPageSize = 50

type auditData struct {
	Entries          []identity.AuditRecord
	Total            int
	Actor, Action    string
	Since, Until     string // as typed: dates (YYYY-MM-DD, UTC)
	Members          []domain.User
	PrevURL, NextURL string
	CSVURL, JSONLURL string
	First, Last      int
	FilterError      *domain.Error
}

// auditFilterOf reads the page's filters: actor, action, since and until as dates (until
// inclusive of its day), and page.
func auditFilterOf(r *http.Request) (domain.AuditFilter, *auditData, int) {
	q := r.URL.Query()
	d := &auditData{Actor: q.Get("actor"), Action: q.Get("action"), Since: q.Get("since"), Until: q.Get("until")}
	f := domain.AuditFilter{ActorID: d.Actor, Action: d.Action, Limit: auditPageSize}
	if d.Since != "" {
		t, err := time.Parse(time.DateOnly, d.Since)
		if err != nil {
			d.FilterError = domain.BadRequest("Invalid date", "From must be a date such as 2026-11-28")
		}
		f.Since = t
	}
	if d.Until != "" {
		t, err := time.Parse(time.DateOnly, d.Until)
		if err != nil {
			d.FilterError = domain.BadRequest("Invalid date", "To must be a date such as 2026-11-28")
		}
		f.Until = t.AddDate(0, 0, 1)
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	f.Offset = (page - 1) * auditPageSize
	return f, d, page
}

// auditPage lists the organization's audit log (admins), with filters, pages and the exports.
func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	f, d, page := auditFilterOf(r)
	if d.FilterError == nil {
		entries, total, err := s.identity.AuditLog(r.Context(), st.p, f)
		var de *domain.Error
		switch {
		case errors.As(err, &de) && de.Kind == domain.KindInvalid:
			d.FilterError = de
		case err != nil:
			s.fail(w, r, err)
			return
		}
		d.Total = total
		for i := range entries {
			d.Entries = append(d.Entries, identity.Record(&entries[i]))
		}
	}
	if users, err := s.identity.ListUsers(r.Context(), st.p); err == nil {
		d.Members = users
	}
	link := func(extra url.Values) string {
		v := url.Values{}
		for k, val := range map[string]string{"actor": d.Actor, "action": d.Action, "since": d.Since, "until": d.Until} {
			if val != "" {
				v.Set(k, val)
			}
		}
		for k, vals := range extra {
			v[k] = vals
		}
		return "?" + v.Encode()
	}
	if page > 1 {
		d.PrevURL = "/settings/audit" + link(url.Values{"page": {strconv.Itoa(page - 1)}})
	}
	if f.Offset+len(d.Entries) < d.Total {
		d.NextURL = "/settings/audit" + link(url.Values{"page": {strconv.Itoa(page + 1)}})
	}
	d.CSVURL = "/settings/audit/export" + link(url.Values{"format": {"csv"}})
	d.JSONLURL = "/settings/audit/export" + link(url.Values{"format": {"jsonl"}})
	if len(d.Entries) > 0 {
		d.First, d.Last = f.Offset+1, f.Offset+len(d.Entries)
	}
	s.render(w, r, http.StatusOK, "audit", "Audit log", d)
}

// auditExport downloads every entry the page's filters select, as CSV or JSON lines, streamed
// a page at a time.
func (s *Server) auditExport(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	f, d, _ := auditFilterOf(r)
	format := r.URL.Query().Get("format")
	ctype, known := identity.AuditFormats[format]
	if d.FilterError != nil || !known {
		s.errorPage(w, r, http.StatusBadRequest, "Invalid export", "Choose CSV or JSON lines, and dates such as 2026-11-28.")
		return
	}
	write, flush := identity.AuditEncoder(w, format)
	started := false
	err := s.identity.ExportAudit(r.Context(), st.p, f, func(e *domain.AuditEntry) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Disposition", `attachment; filename="audit.`+format+`"`)
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
		}
		return write(e)
	})
	switch {
	case err != nil && !started:
		s.fail(w, r, err)
	case err != nil:
		panic(http.ErrAbortHandler) // cut the download rather than end the file early
	default:
		if !started {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Disposition", `attachment; filename="audit.`+format+`"`)
			w.WriteHeader(http.StatusOK)
		}
		_ = flush()
	}
}
