package identity

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"time"

	"verdict/internal/domain"
)

// maxAuditPage bounds a page of the audit log; an export pages through it in pages this size.
const maxAuditPage = 500

// AuditLog returns a page of the organization's audit log (admin only), newest first, and how
// many entries the filter selects. A limit of 0 is 50; more than 500 is refused.
func (s *Service) AuditLog(ctx context.Context, p *Principal, f domain.AuditFilter) ([]domain.AuditEntry, int, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, 0, err
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 0 || f.Limit > maxAuditPage || f.Offset < 0 {
		return nil, 0, domain.BadRequest("Invalid page", "limit must be 1 to 500 and offset 0 or more")
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return nil, 0, domain.BadRequest("Invalid time range", "until must be after since")
	}
	return s.store.Audit().Find(ctx, p.OrgID, f)
}

// ExportAudit hands every entry the filter selects (its page ignored) to emit, newest first,
// reading them a page at a time so that memory stays bounded however long the log (admin only).
// An error of emit (the client went away) ends the export.
func (s *Service) ExportAudit(ctx context.Context, p *Principal, f domain.AuditFilter, emit func(*domain.AuditEntry) error) error {
	if err := p.RequireAdmin(); err != nil {
		return err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return domain.BadRequest("Invalid time range", "until must be after since")
	}
	// The export is bounded above by the time it starts, so entries appended while it runs
	// cannot shift the pages under it.
	if f.Until.IsZero() {
		f.Until = s.clock().Add(time.Millisecond)
	}
	f.Limit, f.Offset = maxAuditPage, 0
	for {
		page, _, err := s.store.Audit().Find(ctx, p.OrgID, f)
		if err != nil {
			return err
		}
		for i := range page {
			if err := emit(&page[i]); err != nil {
				return err
			}
		}
		if len(page) < f.Limit {
			return nil
		}
		f.Offset += len(page)
	}
}

// AuditRecord is an audit entry as both front doors show and export it.
type AuditRecord struct {
	ID        string            `json:"id"`
	ActorID   string            `json:"actorId"`
	ActorName string            `json:"actorName"`
	Action    string            `json:"action"`
	Target    AuditRecordTarget `json:"target"`
	Details   map[string]any    `json:"details"`
	IP        string            `json:"ip"`
	CreatedAt time.Time         `json:"createdAt"`
}

// AuditRecordTarget is what an audit entry's change was made to.
type AuditRecordTarget struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// systemActors name the actors of changes no member made.
var systemActors = map[string]string{domain.AuditOperator: "operator", domain.AuditPaymentProvider: "payment provider",
	domain.AuditSystem: "system"}

// Record is e as shown: details never nil, and a name for the actors that are not members.
func Record(e *domain.AuditEntry) AuditRecord {
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	name := e.ActorName
	if name == "" {
		name = systemActors[e.ActorID]
	}
	return AuditRecord{ID: e.ID, ActorID: e.ActorID, ActorName: name, Action: e.Action,
		Target: AuditRecordTarget{Type: e.TargetType, ID: e.TargetID}, Details: details, IP: e.IP,
		CreatedAt: e.CreatedAt.UTC()}
}

// AuditFormats are the export formats with their content types.
var AuditFormats = map[string]string{"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}

// auditCSVHeader names the CSV export's columns.
var auditCSVHeader = []string{"id", "createdAt", "actorId", "actorName", "action", "targetType", "targetId", "ip", "details"}

// AuditEncoder writes entries to w in format ("csv", with a header row first, or "jsonl");
// flush pushes out what is buffered. A CSV cell that a spreadsheet would run as a formula is
// written after a single quote.
func AuditEncoder(w io.Writer, format string) (write func(*domain.AuditEntry) error, flush func() error) {
	if format == "csv" {
		cw := csv.NewWriter(w)
		header := false
		return func(e *domain.AuditEntry) error {
				if !header {
					header = true
					if err := cw.Write(auditCSVHeader); err != nil {
						return err
					}
				}
				v := Record(e)
				details, err := json.Marshal(v.Details)
				if err != nil {
					return err
				}
				return cw.Write([]string{v.ID, v.CreatedAt.Format("2006-01-02T15:04:05.000Z07:00"), csvCell(v.ActorID),
					csvCell(v.ActorName), csvCell(v.Action), csvCell(v.Target.Type), csvCell(v.Target.ID), v.IP,
					csvCell(string(details))})
			}, func() error {
				if !header {
					header = true
					_ = cw.Write(auditCSVHeader)
				}
				cw.Flush()
				return cw.Error()
			}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return func(e *domain.AuditEntry) error { return enc.Encode(Record(e)) }, func() error { return nil }
}

// csvCell keeps a spreadsheet from reading a cell as a formula: one starting with =, +, -, @,
// a tab or a carriage return is written after a single quote.
func csvCell(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}
