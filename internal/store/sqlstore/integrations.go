package sqlstore

import (
	"context"
	"encoding/json"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func (s *Store) Integrations() store.IntegrationRepo { return integrationRepo{s} }

type integrationRepo struct{ s *Store }

const integrationColumns = `organization_id, provider, key_cipher, settings, enabled, created_at, updated_at`

func scanIntegration(r scanner) (*domain.Integration, error) {
	var in domain.Integration
	var settings string
	var created, updated int64
	if err := r.Scan(&in.OrganizationID, &in.Provider, &in.KeyCipher, &settings, &in.Enabled, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(settings), &in.Settings); err != nil {
		return nil, err
	}
	in.CreatedAt, in.UpdatedAt = fromMillis(created), fromMillis(updated)
	return &in, nil
}

func (r integrationRepo) Get(ctx context.Context, orgID, provider string) (*domain.Integration, error) {
	return get(ctx, r.s, scanIntegration, `SELECT `+integrationColumns+` FROM integrations
		WHERE organization_id = ? AND provider = ?`, orgID, provider)
}

// Put is one upsert, so two admins saving at once leave one of their settings whole.
func (r integrationRepo) Put(ctx context.Context, in *domain.Integration) error {
	settings, err := json.Marshal(in.Settings)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO integrations (`+integrationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (organization_id, provider) DO UPDATE SET key_cipher = excluded.key_cipher,
			settings = excluded.settings, enabled = excluded.enabled, updated_at = excluded.updated_at`,
		in.OrganizationID, in.Provider, in.KeyCipher, string(settings), in.Enabled, millis(in.CreatedAt), millis(in.UpdatedAt))
	return err
}

func (r integrationRepo) Delete(ctx context.Context, orgID, provider string) (bool, error) {
	res, err := r.s.exec(ctx, `DELETE FROM integrations WHERE organization_id = ? AND provider = ?`, orgID, provider)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

const ticketColumns = `id, execution_id, organization_id, provider, external_id, identifier, url, title, created_by, created_at`

// AddTicket inserts the ticket only if the run is the organization's: one statement, so a run
// deleted meanwhile leaves nothing behind, and concurrent tickets are each a row of their own.
func (r integrationRepo) AddTicket(ctx context.Context, t *domain.Ticket) error {
	ensureID(&t.ID)
	return r.s.execOne(ctx, `INSERT INTO execution_tickets (`+ticketColumns+`)
		SELECT ?, id, organization_id, ?, ?, ?, ?, ?, ?, CAST(? AS BIGINT) FROM executions
		WHERE id = ? AND organization_id = ?`,
		t.ID, t.Provider, t.ExternalID, t.Identifier, t.URL, t.Title, t.CreatedBy, millis(t.CreatedAt),
		t.ExecutionID, t.OrganizationID)
}

func scanTicket(r scanner) (*domain.Ticket, error) {
	var t domain.Ticket
	var created int64
	if err := r.Scan(&t.ID, &t.ExecutionID, &t.OrganizationID, &t.Provider, &t.ExternalID, &t.Identifier, &t.URL,
		&t.Title, &t.CreatedBy, &created); err != nil {
		return nil, err
	}
	t.CreatedAt = fromMillis(created)
	return &t, nil
}

func (r integrationRepo) Tickets(ctx context.Context, orgID, executionID string) ([]domain.Ticket, error) {
	ts, err := list(ctx, r.s, scanTicket, `SELECT `+ticketColumns+` FROM execution_tickets
		WHERE execution_id = ? AND organization_id = ? ORDER BY created_at, id`, executionID, orgID)
	if len(ts) == 0 {
		ts = nil
	}
	return ts, err
}
