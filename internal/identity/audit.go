package identity

import (
	"context"
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
