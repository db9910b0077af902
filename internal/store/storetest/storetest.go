// Package storetest is the contract suite every store.Store implementation must pass: run it
// from the implementation's own tests against each database it supports.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Opener returns a fresh, migrated, empty store for one test and closes it when the test ends.
type Opener func(t *testing.T) store.Store

// Run runs the contract suite; every leaf test opens its own store.
func Run(t *testing.T, open Opener) {
	t.Run("Users", func(t *testing.T) { testUsers(t, open) })
	t.Run("Organizations", func(t *testing.T) { testOrganizations(t, open) })
	t.Run("Erasure", func(t *testing.T) { testErasure(t, open) })
	t.Run("Invitations", func(t *testing.T) { testInvitations(t, open) })
	t.Run("APIKeys", func(t *testing.T) { testAPIKeys(t, open) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("SSO", func(t *testing.T) { testSSO(t, open) })
	t.Run("Outbox", func(t *testing.T) { testOutbox(t, open) })
	t.Run("Tx", func(t *testing.T) { testTx(t, open) })
	t.Run("Executions", func(t *testing.T) { RunExecutions(t, open) })
	t.Run("Billing", func(t *testing.T) { testBilling(t, open) })
	t.Run("Analysis", func(t *testing.T) { testAnalysis(t, open) })
	t.Run("Plans", func(t *testing.T) { testPlans(t, open) })
	t.Run("Integrations", func(t *testing.T) { testIntegrations(t, open) })
	t.Run("TestCases", func(t *testing.T) { testTestCases(t, open) })
	t.Run("RevokedTokens", func(t *testing.T) { testRevokedTokens(t, open) })
	t.Run("Tests", func(t *testing.T) { testTests(t, open) })
	t.Run("TestsAtScale", func(t *testing.T) { testTestsAtScale(t, open) })
	t.Run("TestsOverview", func(t *testing.T) { testTestsOverview(t, open) })
	t.Run("Gates", func(t *testing.T) { testGates(t, open) })
	t.Run("Schedules", func(t *testing.T) { testSchedules(t, open) })
	t.Run("SourceControl", func(t *testing.T) { testSourceControl(t, open) })
	t.Run("Notifications", func(t *testing.T) { testNotifications(t, open) })
	t.Run("OutboxDefer", func(t *testing.T) { testOutboxDefer(t, open) })
}

// base is the suite's clock: times are whole milliseconds, the precision stores must keep.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// fixture is one test's store with helpers that create valid records.
type fixture struct {
	t   *testing.T
	ctx context.Context
	s   store.Store
	n   int // makes e-mails, hashes and creation times unique
}

func setup(t *testing.T, open Opener) *fixture {
	return &fixture{t: t, ctx: t.Context(), s: open(t)}
}

func (f *fixture) next() int { f.n++; return f.n }

func (f *fixture) org() *domain.Organization {
	f.t.Helper()
	n := f.next()
	o := &domain.Organization{
		ID: domain.NewID(), Name: fmt.Sprintf("Org %d", n), Slug: fmt.Sprintf("org-%d", n),
		Plan: domain.PlanFree, CreatedAt: base.Add(time.Duration(n) * time.Minute),
	}
	must(f.t, f.s.Organizations().Create(f.ctx, o))
	return o
}

// user creates an active user; each later one is created a minute later.
func (f *fixture) user(orgID string, role domain.Role) *domain.User {
	f.t.Helper()
	n := f.next()
	u := &domain.User{
		ID: domain.NewID(), OrganizationID: orgID, Email: fmt.Sprintf("user%d@example.com", n),
		Name: fmt.Sprintf("User %d", n), PasswordHash: "$2a$10$" + domain.RandomHex(8), Role: role,
		Status: domain.UserActive, CreatedAt: base.Add(time.Duration(n) * time.Minute),
	}
	must(f.t, f.s.Users().Create(f.ctx, u))
	return u
}

func (f *fixture) apiKey(u *domain.User) *domain.APIKey {
	f.t.Helper()
	n := f.next()
	k := &domain.APIKey{
		ID: domain.NewID(), OrganizationID: u.OrganizationID, UserID: u.ID, Name: fmt.Sprintf("key %d", n),
		Prefix: "pk_live_abcd", Hash: domain.RandomHex(32), CreatedAt: base.Add(time.Duration(n) * time.Minute),
	}
	must(f.t, f.s.APIKeys().Create(f.ctx, k))
	return k
}

// invitation creates a pending invitation by inviter, expiring after domain.InvitationTTL.
func (f *fixture) invitation(inviter *domain.User, email string) *domain.Invitation {
	f.t.Helper()
	n := f.next()
	created := base.Add(time.Duration(n) * time.Minute)
	inv := &domain.Invitation{
		ID: domain.NewID(), OrganizationID: inviter.OrganizationID, Email: email, Role: domain.RoleDeveloper,
		Status: domain.InvitationPending, TokenHash: domain.RandomHex(32), InvitedBy: inviter.ID,
		InvitedByName: inviter.Name, ExpiresAt: created.Add(domain.InvitationTTL), CreatedAt: created,
	}
	must(f.t, f.s.Invitations().Create(f.ctx, inv))
	return inv
}

func (f *fixture) getUser(orgID, id string) *domain.User {
	f.t.Helper()
	u, err := f.s.Users().Get(f.ctx, orgID, id)
	must(f.t, err)
	return u
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

func equal[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func ptr[T any](v T) *T { return &v }

// ids returns the IDs of records, in order.
func ids[T any](records []T, id func(T) string) []string {
	out := make([]string, len(records))
	for i, r := range records {
		out[i] = id(r)
	}
	return out
}
