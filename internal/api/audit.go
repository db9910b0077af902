package api

import (
	"net/http"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

// auditEntryView is an audit entry as the API shows it (identity.AuditRecord, its time in the
// API's form).
type auditEntryView struct {
	identity.AuditRecord
	CreatedAt string `json:"createdAt"`
}

// auditFilter reads the audit log's filters: actor, action (a trailing * for a prefix), since
// and until (RFC 3339), limit and offset; and the export format.
func auditFilter(r *http.Request) (domain.AuditFilter, string, *domain.Error) {
	q := query{v: r.URL.Query()}
	f := domain.AuditFilter{ActorID: q.v.Get("actor"), Action: q.v.Get("action"),
		Limit: q.int("limit", 50, 1, 500), Offset: q.int("offset", 0, 0, 1<<30)}
	for _, p := range []struct {
		name string
		at   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.v.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil && q.bad == nil {
				q.bad = domain.BadRequest("Validation error", p.name+" must be a time in RFC 3339 form, e.g. 2026-11-28T09:00:00Z")
			}
			*p.at = t
		}
	}
	format := q.v.Get("format")
	if _, known := identity.AuditFormats[format]; format != "" && !known && q.bad == nil {
		q.bad = domain.BadRequest("Validation error", "format must be csv or jsonl")
	}
	return f, format, q.bad
}

// listAudit answers a page of the audit log, or with format=csv|jsonl streams every entry
// the filters select (their page ignored).
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	f, format, bad := auditFilter(r)
	if bad != nil {
		writeDomainError(w, bad)
		return
	}
	if format != "" {
		s.exportAudit(w, r, f, format)
		return
	}
	entries, total, err := s.identity.AuditLog(r.Context(), principalFrom(r), f)
	if err != nil {
		s.fail(w, r, err, "Failed to fetch the audit log")
		return
	}
	views := make([]auditEntryView, len(entries))
	for i := range entries {
		views[i] = auditEntryView{AuditRecord: identityRecord(&entries[i]), CreatedAt: ts(entries[i].CreatedAt)}
	}
	ok(w, obj{"data": obj{"entries": views, "total": total}})
}

// exportAudit streams the entries as CSV or JSON lines. The answer starts with the first entry
// (or at the end, for none), so a refusal before it is still the API's error body; a failure
// after it cuts the connection, so a file that looks complete is.
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request, f domain.AuditFilter, format string) {
	write, flush := identity.AuditEncoder(w, format)
	started, n := false, 0
	start := func() {
		started = true
		h := w.Header()
		h.Set("Content-Type", identity.AuditFormats[format])
		h.Set("Content-Disposition", `attachment; filename="audit.`+format+`"`)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
	}
	err := s.identity.ExportAudit(r.Context(), principalFrom(r), f, func(e *domain.AuditEntry) error {
		if !started {
			start()
		}
		if err := write(e); err != nil {
			return err
		}
		if n++; n%500 == 0 {
			if err := flush(); err != nil {
				return err
			}
			_ = http.NewResponseController(w).Flush() // a writer that cannot flush keeps buffering
		}
		return r.Context().Err()
	})
	switch {
	case err != nil && !started:
		s.fail(w, r, err, "Failed to export the audit log")
	case err != nil:
		panic(http.ErrAbortHandler) // cut the stream: a complete-looking file must be complete
	default:
		if !started {
			start()
		}
		_ = flush()
	}
}

// identityRecord is an entry as both front doors show it.
var identityRecord = identity.Record
