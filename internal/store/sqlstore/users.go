package sqlstore

import (
	"context"
	"database/sql"
	"time"
	"unsafe"

	"verdict/internal/domain"
)

type userRepo struct{ s *Store }

const userColumns = `id, organization_id, email, name, password_hash, role, status, last_login_at, created_at`

func scanUser(r scanner) (*domain.User, error) {
	var u domain.User
	var lastLogin sql.NullInt64
	var created int64
	if err := r.Scan(&u.ID, &u.OrganizationID, &u.Email, &u.Name, &u.PasswordHash, &u.Role, &u.Status,
		&lastLogin, &created); err != nil {
		return nil, err
	}
	u.LastLoginAt = timePtr(lastLogin)
	u.CreatedAt = fromMillis(created)
	return &u, nil
}

// Create stores u with its e-mail normalised (and sets u.Email to it).
func (r userRepo) Create(ctx context.Context, u *domain.User) error {
	ensureID(&u.ID)
	u.Email = domain.NormalizeEmail(u.Email)
	_, err := r.s.exec(ctx, `INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.OrganizationID, u.Email, u.Name, u.PasswordHash, u.Role, u.Status,
		nullMillis(u.LastLoginAt), millis(u.CreatedAt))
	return err
}

// userBytes is what a cached user holds, for the user cache's bound.
func userBytes(u domain.User) int {
	return int(unsafe.Sizeof(u)) + len(u.ID) + len(u.OrganizationID) + len(u.Email) + len(u.Name) + len(u.PasswordHash) +
		len(u.Role) + len(u.Status)
}

// Get reads the user, from the user cache while no write to users came since (every request
// reads its caller this way); on PostgreSQL only while the store hears of other replicas'
// writes (writefeed.go).
func (r userRepo) Get(ctx context.Context, orgID, id string) (*domain.User, error) {
	const q = `SELECT ` + userColumns + ` FROM users WHERE organization_id = ? AND id = ?`
	c := r.s.users
	if c == nil || (r.s.feed != nil && !r.s.feed.live()) {
		return get(ctx, r.s, scanUser, q, orgID, id)
	}
	key := orgID + "\x00" + id
	if u, ok := c.get(key); ok {
		return &u, nil
	}
	gen := c.now(key)
	u, err := get(ctx, r.s, scanUser, q, orgID, id)
	if err == nil {
		c.put(key, gen, *u)
	}
	return u, err
}

func (r userRepo) GetByEmail(ctx context.Context, email string) (*domain.User, error) {
	return get(ctx, r.s, scanUser, `SELECT `+userColumns+` FROM users WHERE email = ?`, domain.NormalizeEmail(email))
}

func (r userRepo) List(ctx context.Context, orgID string) ([]domain.User, error) {
	return list(ctx, r.s, scanUser,
		`SELECT `+userColumns+` FROM users WHERE organization_id = ? ORDER BY created_at, id`, orgID)
}

func (r userRepo) CountActive(ctx context.Context, orgID string) (int, error) {
	return r.s.count(ctx, `SELECT COUNT(*) FROM users WHERE organization_id = ? AND status = ?`,
		orgID, domain.UserActive)
}

func (r userRepo) CountActiveByRole(ctx context.Context, orgID string, role domain.Role) (int, error) {
	return r.s.count(ctx, `SELECT COUNT(*) FROM users WHERE organization_id = ? AND role = ? AND status = ?`,
		orgID, role, domain.UserActive)
}

func (r userRepo) UpdateRole(ctx context.Context, orgID, id string, role domain.Role) error {
	return r.s.execOne(ctx, `UPDATE users SET role = ? WHERE organization_id = ? AND id = ?`, role, orgID, id)
}

func (r userRepo) UpdateStatus(ctx context.Context, orgID, id string, status domain.UserStatus) error {
	return r.s.execOne(ctx, `UPDATE users SET status = ? WHERE organization_id = ? AND id = ?`, status, orgID, id)
}

func (r userRepo) UpdateLastLogin(ctx context.Context, orgID, id string, at time.Time) error {
	return r.s.execOne(ctx, `UPDATE users SET last_login_at = ? WHERE organization_id = ? AND id = ?`,
		millis(at), orgID, id)
}

// MoveToOrganization also revokes the user's API keys: they were credentials for the
// organization the user leaves.
func (r userRepo) MoveToOrganization(ctx context.Context, fromOrgID, id, toOrgID string, role domain.Role) error {
	return r.s.inTx(ctx, func(tx *Store) error {
		if _, err := tx.exec(ctx, `DELETE FROM api_keys WHERE organization_id = ? AND user_id = ?`, fromOrgID, id); err != nil {
			return err
		}
		return tx.execOne(ctx, `UPDATE users SET organization_id = ?, role = ? WHERE organization_id = ? AND id = ?`,
			toOrgID, role, fromOrgID, id)
	})
}

// Delete removes the user and their API keys; historical records keep the user's ID.
func (r userRepo) Delete(ctx context.Context, orgID, id string) error {
	return r.s.execOne(ctx, `DELETE FROM users WHERE organization_id = ? AND id = ?`, orgID, id)
}
