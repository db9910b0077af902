package domain

import "time"

// Role is a user's role inside their organization.
type Role string

const (
	RoleAdmin     Role = "admin"
	RoleDeveloper Role = "developer"
	RoleViewer    Role = "viewer"
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleDeveloper || r == RoleViewer }

// UserStatus is active or suspended; a suspended user cannot log in or use a token.
type UserStatus string

const (
	UserActive    UserStatus = "active"
	UserSuspended UserStatus = "suspended"
)

// User is a member of exactly one organization.
type User struct {
	ID             string
	OrganizationID string
	Email          string // stored lower-cased; unique across the service
	Name           string
	PasswordHash   string
	Role           Role
	Status         UserStatus
	LastLoginAt    *time.Time
	CreatedAt      time.Time
}

// InvitationStatus is the stored state of an invitation. Expired is derived from ExpiresAt.
type InvitationStatus string

const (
	InvitationPending  InvitationStatus = "pending"
	InvitationAccepted InvitationStatus = "accepted"
	InvitationExpired  InvitationStatus = "expired"
	InvitationRevoked  InvitationStatus = "revoked"
)

// InvitationTTL is how long an invitation token stays valid.
const InvitationTTL = 7 * 24 * time.Hour

// Invitation invites an e-mail into an organization with a role. Only the SHA-256 of the
// token is kept.
type Invitation struct {
	ID             string
	OrganizationID string
	Email          string
	Role           Role
	Status         InvitationStatus // as stored: pending, accepted or revoked
	TokenHash      string           // hex SHA-256 of the 64-hex token
	InvitedBy      string
	InvitedByName  string
	ExpiresAt      time.Time
	CreatedAt      time.Time
	AcceptedAt     *time.Time
}

// EffectiveStatus is the status a reader sees at now: a pending invitation past its expiry
// is expired.
func (i *Invitation) EffectiveStatus(now time.Time) InvitationStatus {
	if i.Status == InvitationPending && !now.Before(i.ExpiresAt) {
		return InvitationExpired
	}
	return i.Status
}

// APIKey is a CI credential that acts as its owner with the owner's current role. Only the
// SHA-256 of the value is stored, with the first 12 characters kept for display.
type APIKey struct {
	ID             string
	OrganizationID string
	UserID         string
	Name           string
	Prefix         string
	Hash           string
	CreatedAt      time.Time
	LastUsedAt     *time.Time
}

// APIKeyPrefix starts every API key value.
const APIKeyPrefix = "pk_live_"

// AuditEntry records who changed what in an organization, when and from where. Entries are
// append-only: nothing changes or deletes one (they go only with their organization).
type AuditEntry struct {
	ID             string
	OrganizationID string
	ActorID        string
	Action         string // e.g. "user.role_changed", "organization.updated"
	TargetType     string
	TargetID       string
	Details        map[string]any
	// IP is the client address of the request that made the change ("" for an operator's
	// command or a background job). Left empty, the store takes ClientIP of the context.
	IP        string
	CreatedAt time.Time
	// ActorName is the actor's name when read back ("" once the member is deleted); never
	// written.
	ActorName string
}
