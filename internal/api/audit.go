package api

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"verdict/internal/domain"
)

// auditEntryView is an audit entry as the API shows it.
type auditEntryView struct {
	ID        string          `json:"id"`
	ActorID   string          `json:"actorId"`
	ActorName string          `json:"actorName"`
	Action    string          `json:"action"`
	Target    auditTargetView `json:"target"`
	Details   map[string]any  `json:"details"`
	IP        string          `json:"ip"`
	CreatedAt string          `json:"createdAt"`
}

type auditTargetView struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

func auditView(e *domain.AuditEntry) auditEntryView {
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	name := e.ActorName
	if name == "" {
		name = systemActors[e.ActorID]
	}
	return auditEntryView{ID: e.ID, ActorID: e.ActorID, ActorName: name, Action: e.Action,
		Target: auditTargetView{Type: e.TargetType, ID: e.TargetID}, Details: details, IP: e.IP, CreatedAt: ts(e.CreatedAt)}
}

// systemActors name the actors of changes no member made.
var systemActors = map[string]string{domain.AuditOperator: "operator", domain.AuditPaymentProvider: "payment provider",
	domain.AuditSystem: "system"}

// auditFilter reads the audit log's filters: actor, action (a trailing * for a prefix), since
// and until (RFC 3339), limit and offset.
func auditFilter(r *http.Request) (domain.AuditFilter, string, *domain.Error) {
	q := query{v: r.URL.Query()}
	f := domain.AuditFilter{ActorID: q.v.Get("actor"), Action: q.v.Get("action"),
		Limit: q.int("limit", 50, 1, 500), Offset: q.int("offset", 0, 0, 1<<30)}
	for name, at := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.v.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil && q.bad == nil {
				q.bad = domain.BadRequest("Validation error", name+" must be a time in RFC 3339 form, e.g. 2026-11-28T09:00:00Z")
			}
			*at = t
		}
	}
	format := q.v.Get("format")
	if format != "" && format != "csv" && format != "jsonl" && q.bad == nil {
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
		views[i] = auditView(&entries[i])
	}
	ok(w, obj{"data": obj{"entries": views, "total": total}})
}

// auditCSVHeader names the export's columns.
var auditCSVHeader = []string{"id", "createdAt", "actorId", "actorName", "action", "targetType", "targetId", "ip", "details"}

// exportAudit streams the entries as CSV or JSON lines. The answer starts with the first entry
// (or at the end, for none), so a refusal before it is still the API's error body; a failure
// after it cuts the stream, which a client sees as a truncated download.
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request, f domain.AuditFilter, format string) {
	started := false
	var cw *csv.Writer
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	start := func() {
		started = true
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		if format == "csv" {
			h.Set("Content-Type", "text/csv; charset=utf-8")
			h.Set("Content-Disposition", `attachment; filename="audit.csv"`)
			cw = csv.NewWriter(w)
			_ = cw.Write(auditCSVHeader)
		} else {
			h.Set("Content-Type", "application/x-ndjson")
			h.Set("Content-Disposition", `attachment; filename="audit.jsonl"`)
		}
		w.WriteHeader(http.StatusOK)
	}
	flush := func() {
		if cw != nil {
			cw.Flush()
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	err := s.identity.ExportAudit(r.Context(), principalFrom(r), f, func(e *domain.AuditEntry) error {
		if !started {
			start()
		}
		v := auditView(e)
		if cw != nil {
			details, _ := json.Marshal(v.Details)
			if err := cw.Write([]string{v.ID, v.CreatedAt, csvCell(v.ActorID), csvCell(v.ActorName), csvCell(v.Action),
				csvCell(v.Target.Type), csvCell(v.Target.ID), v.IP, csvCell(string(details))}); err != nil {
				return err
			}
		} else if err := enc.Encode(v); err != nil {
			return err
		}
		if n++; n%500 == 0 {
			flush()
		}
		return r.Context().Err()
	})
	if err != nil && !started {
		s.fail(w, r, err, "Failed to export the audit log")
		return
	}
	if err != nil {
		panic(http.ErrAbortHandler) // cut the stream: a complete-looking file must be complete
	}
	if !started {
		start()
	}
	flush()
}

// csvCell keeps a spreadsheet from reading a cell as a formula: a cell starting with =, +, -,
// @, a tab or a carriage return is written after a single quote.
func csvCell(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}
