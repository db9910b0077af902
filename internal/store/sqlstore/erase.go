package sqlstore

import (
	"context"
	"strings"
	"time"

	"verdict/internal/store"
)

// An organization's erasure: scheduled by an admin, claimed by one erase job at a time, then
// carried out a bounded statement at a time (EraseStep), its own row last.

func (r orgRepo) ScheduleErase(ctx context.Context, id string, at time.Time, userID string) error {
	res, err := r.s.exec(ctx, `UPDATE organizations SET erase_at = ?, erase_requested_by = ?, erase_lease_until = NULL
		WHERE id = ? AND erase_at IS NULL`, millis(at), userID, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		if _, err := r.Get(ctx, id); err != nil {
			return err
		}
		return store.ErrGuard
	}
	return nil
}

func (r orgRepo) CancelErase(ctx context.Context, id string, now time.Time) error {
	return r.s.execOne(ctx, `UPDATE organizations SET erase_at = NULL, erase_requested_by = '', erase_lease_until = NULL
		WHERE id = ? AND erase_at IS NOT NULL AND erase_at > ?`, id, millis(now))
}

func (r orgRepo) DueErasures(ctx context.Context, now time.Time, limit int) ([]string, error) {
	ids, err := list(ctx, r.s, scanString, `SELECT id FROM organizations
		WHERE erase_at IS NOT NULL AND erase_at <= ? AND (erase_lease_until IS NULL OR erase_lease_until <= ?)
		ORDER BY erase_at, id LIMIT ?`, millis(now), millis(now), limit)
	return ids, err
}

func (r orgRepo) ClaimErase(ctx context.Context, id string, now, leaseUntil time.Time) (bool, error) {
	err := r.s.execOne(ctx, `UPDATE organizations SET erase_lease_until = ?
		WHERE id = ? AND erase_at IS NOT NULL AND erase_at <= ? AND (erase_lease_until IS NULL OR erase_lease_until <= ?)`,
		millis(leaseUntil), id, millis(now), millis(now))
	if err == store.ErrNotFound {
		return false, nil
	}
	return err == nil, err
}

func (r orgRepo) RenewErase(ctx context.Context, id string, until time.Time) error {
	return r.s.execOne(ctx, `UPDATE organizations SET erase_lease_until = ? WHERE id = ? AND erase_at IS NOT NULL`,
		millis(until), id)
}

// eraseTable is one table of an organization's rows and how its rows are found: rows names
// them in a subquery of the table's row key (rowid on SQLite, ctid on PostgreSQL; written
// {key}) taking the organization's ID as each of its params parameters. Tables a row
// references come after the tables that reference it, so no step deletes a row still
// referenced (nor cascades a large delete).
type eraseTable struct {
	name   string
	rows   string
	params int
}

// byOrg finds a table's rows by its organization_id column (indexed in every such table
// whose rows are found this way).
func byOrg(name string) eraseTable {
	return eraseTable{name, `SELECT {key} FROM ` + name + ` WHERE organization_id = ?`, 1}
}

// eraseTables are every table holding an organization's rows, in the order they are deleted.
// A table added to the schema with an organization's rows belongs here; the end-to-end test of
// the erasure (internal/app/custody_erase_test.go) reads the schema and fails for one that is
// not emptied.
var eraseTables = []eraseTable{
	// Through the organization's runs: their logs (the largest), and what hangs from a run.
	{"execution_logs", `SELECT {key} FROM execution_logs WHERE execution_id IN (SELECT id FROM executions WHERE organization_id = ?)`, 1},
	// Through the organization's tests, by the results' index of their test (there is none by
	// organization).
	{"test_results", `SELECT {key} FROM test_results WHERE test_id IN (SELECT id FROM tests WHERE organization_id = ?)`, 1},
	{"execution_tickets", `SELECT {key} FROM execution_tickets WHERE execution_id IN (SELECT id FROM executions WHERE organization_id = ?)`, 1},
	byOrg("execution_labels"),
	byOrg("failure_occurrences"),
	byOrg("triages"),
	byOrg("tests"),
	byOrg("executions"),
	byOrg("run_ledger"),
	{"notification_deliveries", `SELECT {key} FROM notification_deliveries WHERE notification_id IN (SELECT id FROM notifications WHERE organization_id = ?)`, 1},
	byOrg("notifications"),
	{"scm_hook_deliveries", `SELECT {key} FROM scm_hook_deliveries WHERE hook_id IN (SELECT id FROM scm_hooks WHERE organization_id = ?)`, 1},
	byOrg("scm_hooks"),
	byOrg("scm_comments"),
	byOrg("schedules"),
	byOrg("test_case_tags"),
	byOrg("test_cases"),
	byOrg("automation_plans"),
	byOrg("integrations"),
	byOrg("projects"),
	byOrg("usage_alerts"),
	byOrg("billing_events"),
	byOrg("sso_domains"),
	byOrg("organization_sso"),
	byOrg("audit_log"),
	byOrg("api_keys"),
	// Mails to the organization's members and invitees, sent or not: their addresses (and, for
	// those not sent, bodies) are the organization's data too. Matched on the address quoted as
	// the JSON array of recipients holds it ({contains}: the dialect's position of a string in
	// another), once per address: a mail is compared with each address of the organization.
	{"mail_outbox", `SELECT m.{key} FROM mail_outbox m,
		(SELECT email FROM users WHERE organization_id = ? UNION SELECT email FROM invitations WHERE organization_id = ?) a
		WHERE {contains}(m.recipients, '"' || a.email || '"') > 0`, 2},
	byOrg("invitations"),
	byOrg("users"),
}

// EraseStep deletes the next bounded batch of the organization's rows (see store.OrganizationRepo).
func (r orgRepo) EraseStep(ctx context.Context, id string, limit int) (string, int, error) {
	// PostgreSQL reads the rows of an array of ctids by a TID scan; it would plan "ctid IN
	// (subquery)" as a join over the whole table.
	key, contains, in, end := "rowid", "instr", "rowid IN (", ")"
	if r.s.d.name == "postgres" {
		key, contains, in, end = "ctid", "strpos", "ctid = ANY(ARRAY(", "))"
	}
	for _, t := range eraseTables {
		rows := strings.NewReplacer("{key}", key, "{contains}", contains).Replace(t.rows)
		args := make([]any, 0, t.params+1)
		for range t.params {
			args = append(args, id)
		}
		args = append(args, limit)
		res, err := r.s.exec(ctx, `DELETE FROM `+t.name+` WHERE `+in+rows+` LIMIT ?`+end, args...)
		if err != nil {
			return t.name, 0, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return t.name, 0, err
		}
		if n > 0 {
			return t.name, int(n), nil
		}
	}
	res, err := r.s.exec(ctx, `DELETE FROM organizations WHERE id = ?`, id)
	if err != nil {
		return "organizations", 0, err
	}
	n, err := res.RowsAffected()
	return "organizations", int(n), err
}
