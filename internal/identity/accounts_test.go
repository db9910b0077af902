package identity_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/auth"
	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/mail"
	"verdict/internal/ratelimit"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/store/sqlstore/sqlitetest"
	"verdict/internal/testenv"
)

// The service's rules on the real store (a temporary SQLite file) with the in-memory login
// counters, without the HTTP layer or any service: the fast tier (go test -short) runs them.
// The end-to-end tests in internal/app check the same rules through the API on both
// databases and with Redis.

const password = "Sup3r!secret"

type fixture struct {
	t      *testing.T
	ctx    context.Context
	st     *sqlstore.Store
	clock  *testenv.Clock
	tokens *auth.Tokens
	svc    *identity.Service

	mu                           sync.Mutex
	endedUsers, endedKeys, ended []string // sessions ended: of users, of keys, of tokens
}

// runCounter counts an organization's runs as the executions service does.
type runCounter struct{ store.Store }

func (r runCounter) CountRunsSince(ctx context.Context, orgID string, since time.Time) (int, error) {
	return r.Executions().CountSince(ctx, orgID, since)
}

var quiet = slog.New(slog.DiscardHandler)

func newFixture(t *testing.T, edit func(*identity.Deps)) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), st: sqlitetest.Open(t),
		clock: testenv.NewClock(time.Date(2026, 5, 4, 8, 0, 0, 0, time.UTC))}
	var err error
	if f.tokens, err = auth.NewTokens([]byte("0123456789abcdef0123456789abcdef"), 24*time.Hour, f.clock.Now); err != nil {
		t.Fatal(err)
	}
	renderer, err := mail.NewRenderer("http://verdict.test")
	if err != nil {
		t.Fatal(err)
	}
	record := func(to *[]string) func(string) {
		return func(id string) { f.mu.Lock(); *to = append(*to, id); f.mu.Unlock() }
	}
	d := identity.Deps{Store: f.st, Tokens: f.tokens, Lockout: auth.NewLockout(ratelimit.NewMemoryStore(f.clock.Now), f.clock.Now),
		Mailer: &identity.OutboxMailer{Renderer: renderer, Clock: f.clock.Now}, Runs: runCounter{f.st},
		Alerts:      billing.NewAlerts(billing.AlertsDeps{Renderer: renderer, Clock: f.clock.Now, Log: quiet}),
		EndSessions: record(&f.endedUsers), EndKeySessions: record(&f.endedKeys), EndTokenSessions: record(&f.ended),
		Clock: f.clock.Now, Log: quiet}
	if edit != nil {
		edit(&d)
	}
	f.svc = identity.New(d)
	return f
}

// signup creates an organization with its admin and returns the admin's principal.
func (f *fixture) signup(email, org string) *identity.Principal {
	f.t.Helper()
	s, err := f.svc.Signup(f.ctx, identity.SignupInput{Email: email, Password: password, Name: "Admin " + org, OrganizationName: org})
	if err != nil {
		f.t.Fatalf("signup %s: %v", email, err)
	}
	return f.principal(s.Token)
}

// principal authenticates a session token as the API does.
func (f *fixture) principal(token string) *identity.Principal {
	f.t.Helper()
	c, err := f.tokens.Verify(token)
	if err != nil {
		f.t.Fatalf("token: %v", err)
	}
	p, err := f.svc.AuthenticateClaims(f.ctx, c.UserID, c.OrganizationID)
	if err != nil {
		f.t.Fatalf("authenticate: %v", err)
	}
	p.SessionID, p.SessionExpires = c.ID, c.ExpiresAt
	return p
}

var tokenRE = regexp.MustCompile(`token=([0-9a-f]{64})`)

// invite invites email with role and returns the token, read from the e-mail as the invitee would.
func (f *fixture) invite(admin *identity.Principal, email string, role domain.Role) (*identity.CreatedInvitation, string) {
	f.t.Helper()
	inv, err := f.svc.Invite(f.ctx, admin, email, role)
	if err != nil {
		f.t.Fatalf("invite %s: %v", email, err)
	}
	var token string
	for _, m := range sqlitetest.Mails(f.t, f.st) {
		if slices.Contains(m.To, domain.NormalizeEmail(email)) {
			if g := tokenRE.FindStringSubmatch(m.Text); g != nil {
				token = g[1]
			}
		}
	}
	if token == "" {
		f.t.Fatalf("no invitation e-mail with a token to %s", email)
	}
	if strings.Contains(inv.Invitation.TokenHash, token) {
		f.t.Fatal("the invitation's token is stored in clear")
	}
	return inv, token
}

// join invites email with role and signs them up with the invitation.
func (f *fixture) join(admin *identity.Principal, email string, role domain.Role) *identity.Principal {
	f.t.Helper()
	_, token := f.invite(admin, email, role)
	s, err := f.svc.Signup(f.ctx, identity.SignupInput{Email: email, Password: password, Name: "Member", InviteToken: token})
	if err != nil {
		f.t.Fatalf("signup of %s with the invitation: %v", email, err)
	}
	return f.principal(s.Token)
}

// member adds a member with role to admin's organization directly in the store, without a
// password (bcrypt is slow): for the tests that are not about joining or logging in.
func (f *fixture) member(admin *identity.Principal, email string, role domain.Role) *identity.Principal {
	f.t.Helper()
	org, err := f.st.Organizations().Get(f.ctx, admin.OrgID)
	if err != nil {
		f.t.Fatal(err)
	}
	u := sqlitetest.Member(f.t, f.st, org, email, role)
	p, err := f.svc.AuthenticateClaims(f.ctx, u.ID, u.OrganizationID)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) login(email, pw string) (*identity.Session, error) {
	return f.svc.Login(f.ctx, email, pw)
}

// mailsTo are the subjects of the outbox's mails to addr.
func (f *fixture) mailsTo(addr string) []string {
	var out []string
	for _, m := range sqlitetest.Mails(f.t, f.st) {
		if slices.Contains(m.To, addr) {
			out = append(out, m.Subject)
		}
	}
	return out
}

// Signup checks every field, creates the organization on the default plan with the user as
// its admin, and sends the welcome e-mail; an e-mail is registered once, whatever its case.
func TestSignup(t *testing.T) {
	f := newFixture(t, func(d *identity.Deps) { d.DefaultPlan = domain.PlanTeam })
	ok := identity.SignupInput{Email: "Ada@Example.com", Password: password, Name: "Ada", OrganizationName: "Analytical Engines"}
	for _, c := range []struct {
		edit      func(*identity.SignupInput)
		code, msg string
	}{
		{func(in *identity.SignupInput) { in.Email = " " }, "Missing required fields", "email, password and name are required"},
		{func(in *identity.SignupInput) { in.Password = "" }, "Missing required fields", ""},
		{func(in *identity.SignupInput) { in.Name = "" }, "Missing required fields", ""},
		{func(in *identity.SignupInput) { in.OrganizationName = " " }, "Missing required fields", "organizationName unless an inviteToken is given"},
		{func(in *identity.SignupInput) { in.Email = "not-an-email" }, "Invalid email format", "The e-mail address is not valid"},
		{func(in *identity.SignupInput) { in.Name = "a\u202eb" }, "Missing required fields", "name must have 1 to 100 visible characters"},
		{func(in *identity.SignupInput) { in.Password = "short1!A" + "" }, "", ""}, // 8 characters: accepted below
		{func(in *identity.SignupInput) { in.Password = "alllowercase1!" }, "Weak password", "an upper-case letter, a lower-case letter, a digit and a special character"},
		{func(in *identity.SignupInput) { in.Password = "Aa1!" }, "Weak password", "at least 8 characters"},
		{func(in *identity.SignupInput) { in.Password = strings.Repeat("Aa1!", 19) }, "Weak password", "at most 72 bytes"},
		{func(in *identity.SignupInput) { in.OrganizationName = "A" }, "Invalid organization name", "organizationName must have 2 to 100 visible characters"},
		{func(in *identity.SignupInput) { in.InviteToken = "abc" }, "Invalid invitation token", "The invitation token is not valid"},
		{func(in *identity.SignupInput) { in.InviteToken = strings.Repeat("ab", 32) }, "Invalid invitation token", "The invitation token is not valid"},
	} {
		in := ok
		c.edit(&in)
		if c.code == "" {
			continue
		}
		_, err := f.svc.Signup(f.ctx, in)
		testenv.WantError(t, err, 400, c.code, c.msg)
	}
	if n, _ := f.st.Users().CountActive(f.ctx, "x"); n != 0 {
		t.Fatal("refused signups stored users")
	}

	s, err := f.svc.Signup(f.ctx, ok)
	if err != nil {
		t.Fatal(err)
	}
	if s.User.Email != "ada@example.com" || s.User.Role != domain.RoleAdmin || s.Org.Plan != domain.PlanTeam ||
		s.Org.Name != "Analytical Engines" || s.Org.Slug != "analytical-engines" || s.User.PasswordHash == password {
		t.Fatalf("session: %+v %+v", s.User, s.Org)
	}
	p := f.principal(s.Token)
	if p.UserID != s.User.ID || p.OrgID != s.Org.ID || p.Role != domain.RoleAdmin {
		t.Fatalf("the token names %+v", p)
	}
	if got := f.mailsTo("ada@example.com"); len(got) != 1 || !strings.Contains(got[0], "Welcome") {
		t.Fatalf("mails to the new admin: %q", got)
	}
	again := ok
	again.Email, again.OrganizationName = "ADA@example.COM", "Second Org"
	_, err = f.svc.Signup(f.ctx, again)
	testenv.WantError(t, err, 409, "Email already registered", "An account with this e-mail already exists")

	// Without a default plan, organizations start free.
	free := newFixture(t, nil)
	s, err = free.svc.Signup(free.ctx, ok)
	if err != nil || s.Org.Plan != domain.PlanFree {
		t.Fatalf("default plan: %+v %v", s, err)
	}
}

// Five failed logins within 15 minutes lock the address for 15 minutes (429 with retryAfter),
// even for the right password; unknown addresses are counted alike; a success clears the
// count; a suspended account is told so only with the right password.
func TestLoginAndLockout(t *testing.T) {
	f := newFixture(t, nil)
	admin := f.signup("bob@example.com", "Bobs")
	_, err := f.login("", password)
	testenv.WantError(t, err, 400, "Missing credentials", "email and password are required")

	for i := 1; i <= auth.MaxFailedLogins; i++ {
		_, err := f.login("bob@example.com", "Wr0ng!pass")
		de := testenv.WantError(t, err, 401, "Invalid credentials", "The e-mail or password is wrong")
		if de.Fields["attemptsRemaining"] != auth.MaxFailedLogins-i {
			t.Fatalf("failure %d: attemptsRemaining %v", i, de.Fields["attemptsRemaining"])
		}
	}
	_, err = f.login("BOB@example.com", password)
	if de := testenv.WantError(t, err, 429, "Account temporarily locked", "Too many failed logins"); de.Fields["retryAfter"] != 900 {
		t.Fatalf("retryAfter %v, want 900", de.Fields["retryAfter"])
	}
	f.clock.Advance(14*time.Minute + 59*time.Second)
	_, err = f.login("bob@example.com", password)
	if de := testenv.WantError(t, err, 429, "Account temporarily locked", ""); de.Fields["retryAfter"] != 1 {
		t.Fatalf("retryAfter %v, want 1", de.Fields["retryAfter"])
	}
	f.clock.Advance(time.Second)
	s, err := f.login(" Bob@Example.com ", password)
	if err != nil || s.User.ID != admin.UserID || s.User.LastLoginAt == nil {
		t.Fatalf("login after the lock: %+v %v", s, err)
	}
	if u, _ := f.st.Users().Get(f.ctx, admin.OrgID, admin.UserID); u.LastLoginAt == nil || !u.LastLoginAt.Equal(f.clock.Now()) {
		t.Fatalf("last login stored: %v", u.LastLoginAt)
	}
	// A success clears the count: the next failure is the first again.
	_, err = f.login("bob@example.com", "Wr0ng!pass")
	if de := testenv.WantError(t, err, 401, "Invalid credentials", ""); de.Fields["attemptsRemaining"] != auth.MaxFailedLogins-1 {
		t.Fatalf("the success did not clear the count: %v", de.Fields)
	}
	// Failures spread over more than the window do not add up.
	f.clock.Advance(auth.FailureWindow + time.Minute)
	_, err = f.login("bob@example.com", "Wr0ng!pass")
	if de := testenv.WantError(t, err, 401, "Invalid credentials", ""); de.Fields["attemptsRemaining"] != auth.MaxFailedLogins-1 {
		t.Fatalf("the window did not restart: %v", de.Fields)
	}
	// An unknown address gets the same answer, and is counted alike.
	for i := 1; i <= 2; i++ {
		_, err := f.login("nobody@example.com", password)
		if de := testenv.WantError(t, err, 401, "Invalid credentials", "The e-mail or password is wrong"); de.Fields["attemptsRemaining"] != auth.MaxFailedLogins-i {
			t.Fatalf("unknown address, failure %d: %v", i, de.Fields)
		}
	}
	// A password longer than bcrypt reads is refused without being checked.
	_, err = f.login("bob@example.com", password+strings.Repeat("x", 80))
	testenv.WantError(t, err, 401, "Invalid credentials", "")

	// Suspended: the right password says so; a wrong one says nothing more.
	dev := f.join(admin, "dev@example.com", domain.RoleDeveloper)
	if _, err := f.login("dev@example.com", password); err != nil {
		t.Fatalf("the invited member's login: %v", err)
	}
	if _, err := f.svc.SetStatus(f.ctx, admin, dev.UserID, domain.UserSuspended); err != nil {
		t.Fatal(err)
	}
	_, err = f.login("dev@example.com", password)
	testenv.WantError(t, err, 403, "Account suspended", "This account is suspended")
	_, err = f.login("dev@example.com", "Wr0ng!pass")
	testenv.WantError(t, err, 401, "Invalid credentials", "")
}

// Invitations: admin only, one pending per address, seats reserved by pending ones, the token
// mailed and never stored, single use, expiring after 7 days, revocable; the invitee joins with
// the invited role.
func TestInvitations(t *testing.T) {
	f := newFixture(t, nil) // free: 3 users
	admin := f.signup("ada@example.com", "Ada Co")
	_, err := f.svc.Invite(f.ctx, admin, "", domain.RoleDeveloper)
	testenv.WantError(t, err, 400, "Missing required fields", "email and role are required")
	_, err = f.svc.Invite(f.ctx, admin, "no-at-sign", domain.RoleDeveloper)
	testenv.WantError(t, err, 400, "Invalid email format", "")
	_, err = f.svc.Invite(f.ctx, admin, "x@example.com", "owner")
	testenv.WantError(t, err, 400, "Invalid role", "role must be admin, developer or viewer")
	_, err = f.svc.Invite(f.ctx, admin, "ADA@example.com", domain.RoleViewer)
	testenv.WantError(t, err, 409, "User already in organization", "This e-mail already belongs to a member")

	inv, token := f.invite(admin, "Dev@Example.com", domain.RoleDeveloper)
	if inv.ActionType() != "signup" || inv.Invitation.Email != "dev@example.com" || inv.Invitation.Status != domain.InvitationPending ||
		!inv.Invitation.ExpiresAt.Equal(f.clock.Now().Add(domain.InvitationTTL)) {
		t.Fatalf("invitation: %+v", inv.Invitation)
	}
	_, err = f.svc.Invite(f.ctx, admin, "dev@example.com", domain.RoleViewer)
	testenv.WantError(t, err, 409, "Invitation already sent", "A pending invitation for this e-mail exists")

	preview, err := f.svc.ValidateInvitation(f.ctx, token)
	if err != nil || preview.OrganizationName != "Ada Co" || preview.Role != domain.RoleDeveloper ||
		preview.InviterName != "Admin Ada Co" || preview.Email != "dev@example.com" || preview.UserExists {
		t.Fatalf("preview: %+v %v", preview, err)
	}
	_, err = f.svc.ValidateInvitation(f.ctx, "xyz")
	if de := testenv.WantError(t, err, 400, "Invalid token format", "64 hexadecimal characters"); de.Fields["valid"] != false {
		t.Fatalf("fields %v", de.Fields)
	}
	_, err = f.svc.ValidateInvitation(f.ctx, strings.Repeat("0", 64))
	testenv.WantError(t, err, 404, "Invitation not found or already used", "")

	// The third seat is held by the pending invitation.
	_, viewerToken := f.invite(admin, "viewer@example.com", domain.RoleViewer)
	_, err = f.svc.Invite(f.ctx, admin, "fourth@example.com", domain.RoleViewer)
	testenv.WantError(t, err, 403, "User limit reached", "The organization has reached its plan's user limit")

	// The token is for its address only, and for one signup.
	_, err = f.svc.Signup(f.ctx, identity.SignupInput{Email: "eve@example.com", Password: password, Name: "Eve", InviteToken: token})
	testenv.WantError(t, err, 400, "Invalid invitation token", "The invitation was sent to a different e-mail address")
	s, err := f.svc.Signup(f.ctx, identity.SignupInput{Email: "dev@example.com", Password: password, Name: "Dev", InviteToken: token})
	if err != nil || s.Org.ID != admin.OrgID || s.User.Role != domain.RoleDeveloper {
		t.Fatalf("signup with the invitation: %+v %v", s, err)
	}
	_, err = f.svc.Signup(f.ctx, identity.SignupInput{Email: "dev2@example.com", Password: password, Name: "Dev", InviteToken: token})
	testenv.WantError(t, err, 400, "Invalid invitation token", "The invitation token is not valid")
	list, err := f.svc.ListInvitations(f.ctx, admin)
	if err != nil || len(list) != 2 {
		t.Fatalf("invitations: %v %v", list, err)
	}
	for _, i := range list {
		if i.Email == "dev@example.com" && i.Status != domain.InvitationAccepted {
			t.Fatalf("the used invitation is %s", i.Status)
		}
	}

	// Revoked: the token stops working, and the seat is free again.
	var viewerInv domain.Invitation
	for _, i := range list {
		if i.Email == "viewer@example.com" {
			viewerInv = i
		}
	}
	testenv.WantError(t, f.svc.RevokeInvitation(f.ctx, admin, "nope"), 400, "Invalid invitation ID", "")
	testenv.WantError(t, f.svc.RevokeInvitation(f.ctx, admin, domain.NewID()), 404, "Invitation not found", "")
	if err := f.svc.RevokeInvitation(f.ctx, admin, viewerInv.ID); err != nil {
		t.Fatal(err)
	}
	testenv.WantError(t, f.svc.RevokeInvitation(f.ctx, admin, viewerInv.ID), 400, "Invitation is not pending", "")
	_, err = f.svc.Signup(f.ctx, identity.SignupInput{Email: "viewer@example.com", Password: password, Name: "V", InviteToken: viewerToken})
	testenv.WantError(t, err, 400, "Invalid invitation token", "")

	// Expired after 7 days: told so, and the seat is free again.
	_, late := f.invite(admin, "late@example.com", domain.RoleViewer)
	f.clock.Advance(domain.InvitationTTL + time.Second)
	_, err = f.svc.ValidateInvitation(f.ctx, late)
	testenv.WantError(t, err, 404, "Invitation has expired", "older than 7 days")
	_, err = f.svc.Signup(f.ctx, identity.SignupInput{Email: "late@example.com", Password: password, Name: "L", InviteToken: late})
	testenv.WantError(t, err, 400, "Invitation has expired", "ask for a new one")
	f.invite(admin, "late@example.com", domain.RoleViewer)

	// Another organization's admin sees none of them.
	other := f.signup("x@example.com", "X Co")
	if l, _ := f.svc.ListInvitations(f.ctx, other); len(l) != 0 {
		t.Fatalf("another organization lists %d invitations", len(l))
	}
	testenv.WantError(t, f.svc.RevokeInvitation(f.ctx, other, viewerInv.ID), 404, "Invitation not found", "")
}

// An existing user accepts an invitation: they move with the invited role and a new token, and
// their old sessions end; the address must be theirs; the last admin of a team cannot leave it.
func TestAcceptInvitation(t *testing.T) {
	f := newFixture(t, nil)
	home := f.signup("ada@example.com", "Home Co")
	f.member(home, "dev@example.com", domain.RoleDeveloper)
	away := f.signup("bo@example.com", "Away Co")

	inv, token := f.invite(away, "ada@example.com", domain.RoleViewer)
	if inv.ActionType() != "join" {
		t.Fatalf("action %q for an existing account", inv.ActionType())
	}
	_, err := f.svc.AcceptInvitation(f.ctx, home, "")
	testenv.WantError(t, err, 400, "Missing token", "")
	_, err = f.svc.AcceptInvitation(f.ctx, home, "12")
	testenv.WantError(t, err, 400, "Invalid token format", "")
	_, err = f.svc.AcceptInvitation(f.ctx, home, token)
	testenv.WantError(t, err, 400, "Cannot leave as the last admin", "Make another member an admin")

	_, other := f.invite(away, "someone@example.com", domain.RoleViewer)
	_, err = f.svc.AcceptInvitation(f.ctx, home, other)
	testenv.WantError(t, err, 403, "Email mismatch", "The invitation was sent to a different e-mail address")
	_, err = f.svc.AcceptInvitation(f.ctx, away, other)
	testenv.WantError(t, err, 403, "Email mismatch", "")

	// A second admin at home lets Ada go.
	f.member(home, "admin2@example.com", domain.RoleAdmin)
	acc, err := f.svc.AcceptInvitation(f.ctx, home, token)
	if err != nil || acc.Org.ID != away.OrgID || acc.User.Role != domain.RoleViewer {
		t.Fatalf("accept: %+v %v", acc, err)
	}
	if p := f.principal(acc.Token); p.OrgID != away.OrgID || p.Role != domain.RoleViewer {
		t.Fatalf("the new token names %+v", p)
	}
	if !slices.Contains(f.endedUsers, home.UserID) {
		t.Fatalf("the mover's old sessions were not ended: %v", f.endedUsers)
	}
	// The old token's organization no longer has the user.
	_, err = f.svc.AuthenticateClaims(f.ctx, home.UserID, home.OrgID)
	testenv.WantError(t, err, 401, "Invalid or expired token", "")
	_, err = f.svc.AcceptInvitation(f.ctx, f.principal(acc.Token), token)
	testenv.WantError(t, err, 404, "Invalid or expired invitation", "")
}

// Roles and status: admin only, never one's own, never leaving the organization without an
// active admin (suspended admins do not count); a change applies to the next request, and a
// suspended or deleted member's sessions end at once.
func TestMembersAndLastAdmin(t *testing.T) {
	f := newFixture(t, func(d *identity.Deps) { d.DefaultPlan = domain.PlanTeam })
	a := f.signup("a@example.com", "Org A")
	b := f.member(a, "b@example.com", domain.RoleAdmin)
	dev := f.member(a, "dev@example.com", domain.RoleDeveloper)

	_, err := f.svc.ChangeRole(f.ctx, a, a.UserID, domain.RoleViewer)
	testenv.WantError(t, err, 400, "Cannot change own role", "An admin cannot change their own role")
	_, err = f.svc.ChangeRole(f.ctx, a, dev.UserID, "owner")
	testenv.WantError(t, err, 400, "Invalid role", "")
	_, err = f.svc.SetStatus(f.ctx, a, a.UserID, domain.UserSuspended)
	testenv.WantError(t, err, 400, "Cannot change own status", "An admin cannot suspend their own account")
	_, err = f.svc.SetStatus(f.ctx, a, dev.UserID, "gone")
	testenv.WantError(t, err, 400, "Invalid status", "status must be active or suspended")
	testenv.WantError(t, f.svc.DeleteUser(f.ctx, a, a.UserID), 400, "Cannot delete own account", "")

	// A promotion applies to the next request, made with the old token.
	if u, err := f.svc.ChangeRole(f.ctx, a, dev.UserID, domain.RoleAdmin); err != nil || u.Role != domain.RoleAdmin {
		t.Fatalf("promote: %+v %v", u, err)
	}
	if p, _ := f.svc.AuthenticateClaims(f.ctx, dev.UserID, dev.OrgID); p.Role != domain.RoleAdmin {
		t.Fatalf("role after the promotion: %s", p.Role)
	}
	if _, err := f.svc.ChangeRole(f.ctx, a, dev.UserID, domain.RoleDeveloper); err != nil {
		t.Fatal(err)
	}

	// Two admins demoting each other: whoever comes second finds the other the last admin.
	if _, err := f.svc.ChangeRole(f.ctx, a, b.UserID, domain.RoleDeveloper); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ChangeRole(f.ctx, b, a.UserID, domain.RoleDeveloper) // b's request, read as an admin before
	testenv.WantError(t, err, 400, "Cannot demote the last admin", "The organization needs at least one active admin")
	_, err = f.svc.SetStatus(f.ctx, b, a.UserID, domain.UserSuspended)
	testenv.WantError(t, err, 400, "Cannot suspend the last admin", "")
	testenv.WantError(t, f.svc.DeleteUser(f.ctx, b, a.UserID), 400, "Cannot delete the last admin", "")

	// A suspended admin does not count: a is still the last active one.
	if _, err := f.svc.ChangeRole(f.ctx, a, b.UserID, domain.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetStatus(f.ctx, a, b.UserID, domain.UserSuspended); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ChangeRole(f.ctx, b, a.UserID, domain.RoleViewer)
	testenv.WantError(t, err, 400, "Cannot demote the last admin", "")
	if !slices.Contains(f.endedUsers, b.UserID) {
		t.Fatalf("the suspended member's sessions were not ended: %v", f.endedUsers)
	}
	_, err = f.svc.AuthenticateClaims(f.ctx, b.UserID, b.OrgID)
	testenv.WantError(t, err, 401, "Invalid or expired token", "The user of this token no longer exists or is suspended")
	// The suspended admin can be deleted: a still runs the organization.
	if err := f.svc.DeleteUser(f.ctx, a, b.UserID); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.GetUser(f.ctx, a, b.UserID)
	testenv.WantError(t, err, 404, "User not found", "No such user in your organization")

	// Every change is in the audit log, by whom, about whom.
	entries, err := f.st.Audit().List(f.ctx, a.OrgID, 50)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		if e.ActorID != a.UserID {
			t.Fatalf("audit entry by %s: %+v", e.ActorID, e)
		}
		actions = append(actions, e.Action)
	}
	want := []string{"user.deleted", "user.status_changed", "user.role_changed", "user.role_changed", "user.role_changed", "user.role_changed"}
	if !slices.Equal(actions, want) {
		t.Fatalf("audit %v, want %v", actions, want)
	}

	// Another organization's members are not found, and not changed.
	xOrg := sqlitetest.Org(t, f.st, "Org X", domain.PlanTeam, f.clock.Now())
	x := sqlitetest.As(sqlitetest.Member(t, f.st, xOrg, "x@example.com", domain.RoleAdmin))
	_, err = f.svc.ChangeRole(f.ctx, x, dev.UserID, domain.RoleViewer)
	testenv.WantError(t, err, 404, "User not found", "")
	_, err = f.svc.SetStatus(f.ctx, x, dev.UserID, domain.UserSuspended)
	testenv.WantError(t, err, 404, "User not found", "")
	testenv.WantError(t, f.svc.DeleteUser(f.ctx, x, dev.UserID), 404, "User not found", "")
	if users, _ := f.svc.ListUsers(f.ctx, x); len(users) != 1 {
		t.Fatalf("another organization lists %d users", len(users))
	}
	if p, err := f.svc.AuthenticateClaims(f.ctx, dev.UserID, dev.OrgID); err != nil || p.Role != domain.RoleDeveloper {
		t.Fatalf("the member after the intruder: %+v %v", p, err)
	}
}

// A member back from suspension takes a seat again: refused when the plan is full.
func TestReactivationNeedsASeat(t *testing.T) {
	f := newFixture(t, nil) // free: 3 users
	admin := f.signup("a@example.com", "Seats")
	one := f.member(admin, "one@example.com", domain.RoleDeveloper)
	if _, err := f.svc.SetStatus(f.ctx, admin, one.UserID, domain.UserSuspended); err != nil {
		t.Fatal(err)
	}
	f.member(admin, "two@example.com", domain.RoleDeveloper)
	f.join(admin, "three@example.com", domain.RoleViewer) // 3 of 3 active
	_, err := f.svc.SetStatus(f.ctx, admin, one.UserID, domain.UserActive)
	testenv.WantError(t, err, 403, "User limit reached", "")
	if u, _ := f.svc.GetUser(f.ctx, admin, one.UserID); u.Status != domain.UserSuspended {
		t.Fatalf("refused reactivation left %s", u.Status)
	}
	// The join that filled the plan raised the users alert to the admin.
	if got := f.mailsTo("a@example.com"); !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "100% of its users limit") }) {
		t.Fatalf("mails to the admin: %q", got)
	}
}

// API keys: the value is shown once and only its hash stored; it authenticates as its owner
// as they are now; members list and revoke their own, admins everyone's; a revoked key and a
// suspended owner's key are refused, and the key's connections end.
func TestAPIKeys(t *testing.T) {
	f := newFixture(t, nil)
	admin := f.signup("a@example.com", "Keys Co")
	dev := f.member(admin, "dev@example.com", domain.RoleDeveloper)

	_, _, err := f.svc.CreateAPIKey(f.ctx, dev, "  ")
	testenv.WantError(t, err, 400, "Missing required fields", "name is required")
	_, _, err = f.svc.CreateAPIKey(f.ctx, dev, "ci\u200b")
	testenv.WantError(t, err, 400, "Invalid name", "")
	k, value, err := f.svc.CreateAPIKey(f.ctx, dev, "CI")
	if err != nil {
		t.Fatal(err)
	}
	if k.Hash == value || strings.Contains(k.Hash, value) || !strings.HasPrefix(value, k.Prefix) {
		t.Fatalf("key %+v for value %q", k, value)
	}
	adminKey, _, err := f.svc.CreateAPIKey(f.ctx, admin, "deploy")
	if err != nil {
		t.Fatal(err)
	}

	p, err := f.svc.AuthenticateKey(f.ctx, value)
	if err != nil || p.UserID != dev.UserID || p.OrgID != dev.OrgID || p.Role != domain.RoleDeveloper || p.APIKeyID != k.ID {
		t.Fatalf("key principal: %+v %v", p, err)
	}
	stored, _ := f.st.APIKeys().List(f.ctx, dev.OrgID)
	for _, s := range stored {
		if s.ID == k.ID && (s.LastUsedAt == nil || !s.LastUsedAt.Equal(f.clock.Now())) {
			t.Fatalf("last use not recorded: %v", s.LastUsedAt)
		}
	}
	for _, bad := range []string{"", "nope", value + "x", strings.Replace(value, value[len(value)-4:], "0000", 1)} {
		_, err := f.svc.AuthenticateKey(f.ctx, bad)
		testenv.WantError(t, err, 401, "Invalid API key", "The API key is unknown or revoked")
	}

	_, err = f.svc.ListAPIKeys(f.ctx, dev, true)
	testenv.WantError(t, err, 403, "Forbidden", "You do not have permission to do this")
	if own, _ := f.svc.ListAPIKeys(f.ctx, dev, false); len(own) != 1 || own[0].ID != k.ID {
		t.Fatalf("the developer's keys: %v", own)
	}
	if all, _ := f.svc.ListAPIKeys(f.ctx, admin, true); len(all) != 2 {
		t.Fatalf("all keys: %d", len(all))
	}
	testenv.WantError(t, f.svc.RevokeAPIKey(f.ctx, dev, adminKey.ID), 404, "API key not found", "")
	x := f.member(f.signup("x@example.com", "X Co"), "x2@example.com", domain.RoleAdmin)
	testenv.WantError(t, f.svc.RevokeAPIKey(f.ctx, x, k.ID), 404, "API key not found", "")

	// A role change applies to the key at once; a suspended owner's key is refused.
	if _, err := f.svc.ChangeRole(f.ctx, admin, dev.UserID, domain.RoleViewer); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.svc.AuthenticateKey(f.ctx, value); p.Role != domain.RoleViewer {
		t.Fatalf("key role after the change: %s", p.Role)
	}
	if _, err := f.svc.SetStatus(f.ctx, admin, dev.UserID, domain.UserSuspended); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.AuthenticateKey(f.ctx, value)
	testenv.WantError(t, err, 401, "Invalid API key", "")
	if _, err := f.svc.SetStatus(f.ctx, admin, dev.UserID, domain.UserActive); err != nil {
		t.Fatal(err)
	}

	// The admin revokes the developer's key: refused from then on, its connections end.
	if err := f.svc.RevokeAPIKey(f.ctx, admin, k.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.AuthenticateKey(f.ctx, value)
	testenv.WantError(t, err, 401, "Invalid API key", "")
	if !slices.Equal(f.endedKeys, []string{k.ID}) {
		t.Fatalf("ended key sessions %v", f.endedKeys)
	}
	testenv.WantError(t, f.svc.RevokeAPIKey(f.ctx, admin, k.ID), 404, "API key not found", "")
}

// Signing out revokes the session's token in the database: refused at once here, and by
// another replica on the same database once it reads the list; an API key is no session.
func TestRevokeSession(t *testing.T) {
	f := newFixture(t, nil)
	admin := f.signup("a@example.com", "Revoke Co")
	key := *admin
	key.SessionID, key.APIKeyID = "", "k1"
	testenv.WantError(t, f.svc.RevokeSession(f.ctx, &key), 400, "Not a session token", "DELETE /api/auth/api-keys/{id}")

	// The other replica: its own token set, the same database.
	replicaTokens, err := auth.NewTokens([]byte("0123456789abcdef0123456789abcdef"), 24*time.Hour, f.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	var replicaEnded []string
	replica := identity.New(identity.Deps{Store: f.st, Tokens: replicaTokens, Clock: f.clock.Now,
		EndTokenSessions: func(id string) { replicaEnded = append(replicaEnded, id) }})
	if err := replica.SyncRevocations(f.ctx); err != nil {
		t.Fatal(err)
	}

	if err := f.svc.RevokeSession(f.ctx, admin); err != nil {
		t.Fatal(err)
	}
	if !f.tokens.Revoked(admin.SessionID) || !slices.Equal(f.ended, []string{admin.SessionID}) {
		t.Fatalf("here: revoked %v, ended %v", f.tokens.Revoked(admin.SessionID), f.ended)
	}
	if replicaTokens.Revoked(admin.SessionID) {
		t.Fatal("the other replica knew before reading the list")
	}
	if err := replica.SyncRevocations(f.ctx); err != nil {
		t.Fatal(err)
	}
	if !replicaTokens.Revoked(admin.SessionID) || !slices.Equal(replicaEnded, []string{admin.SessionID}) {
		t.Fatalf("other replica: revoked %v, ended %v", replicaTokens.Revoked(admin.SessionID), replicaEnded)
	}
	// A new login opens a new session that works.
	s, err := f.login("a@example.com", password)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := replicaTokens.Verify(s.Token); err != nil || c.ID == admin.SessionID {
		t.Fatalf("new session on the other replica: %+v %v", c, err)
	}
}

// Organization settings are the admin's, checked, and audited; usage counts the period's runs,
// active members, projects and storage, with alerts near the limits.
func TestOrganizationSettingsAndUsage(t *testing.T) {
	f := newFixture(t, nil)
	admin := f.signup("a@example.com", "Settings Co")
	for _, c := range []struct {
		patch     identity.OrganizationPatch
		code, msg string
	}{
		{identity.OrganizationPatch{Name: ptr(" x ")}, "Invalid organization name", "name must have 2 to 100 visible characters"},
		{identity.OrganizationPatch{AllowedImages: ptr([]string{"Bad Pattern"})}, "Validation error", `allowedImages: "Bad Pattern" is not an image pattern`},
		{identity.OrganizationPatch{AllowedImages: ptr(make([]string, domain.MaxImagePatterns+1))}, "Validation error", fmt.Sprintf("allowedImages holds at most %d patterns", domain.MaxImagePatterns)},
	} {
		_, err := f.svc.UpdateOrganization(f.ctx, admin, c.patch)
		testenv.WantError(t, err, 400, c.code, c.msg)
	}
	org, err := f.svc.UpdateOrganization(f.ctx, admin, identity.OrganizationPatch{Name: ptr(" Renamed Co "), AIAnalysisEnabled: ptr(true),
		AllowedImages: ptr([]string{"registry.test/*"})})
	if err != nil || org.Name != "Renamed Co" || !org.AIAnalysisEnabled || !slices.Equal(org.AllowedImages, []string{"registry.test/*"}) {
		t.Fatalf("update: %+v %v", org, err)
	}
	stored, _ := f.st.Organizations().Get(f.ctx, admin.OrgID)
	if stored.Name != "Renamed Co" || !stored.AIAnalysisEnabled || !slices.Equal(stored.AllowedImages, []string{"registry.test/*"}) {
		t.Fatalf("stored: %+v", stored)
	}
	// The same values again change nothing and log nothing.
	if _, err := f.svc.UpdateOrganization(f.ctx, admin, identity.OrganizationPatch{Name: ptr("Renamed Co")}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := f.st.Audit().List(f.ctx, admin.OrgID, 10); len(entries) != 1 || entries[0].Action != "organization.updated" {
		t.Fatalf("audit: %+v", entries)
	}
	if org, _ := f.svc.UpdateOrganization(f.ctx, admin, identity.OrganizationPatch{AllowedImages: ptr([]string{})}); org.AllowedImages != nil {
		t.Fatalf("emptied patterns: %v", org.AllowedImages)
	}

	f.member(admin, "dev@example.com", domain.RoleDeveloper) // 2 of 3 users
	for i := range 80 {
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: admin.OrgID, TaskID: fmt.Sprintf("r%d", i), Image: "img",
			Status: domain.ExecPending, QueuedAt: f.clock.Now()}
		if err := f.st.Executions().Create(f.ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	u, err := f.svc.Usage(f.ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if u.RunsUsed != 80 || u.ActiveUsers != 2 || u.Projects != 0 || u.Limits.MaxTestRuns != 100 ||
		!u.PeriodStart.Equal(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)) || !u.PeriodEnd.Equal(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("usage: %+v", u)
	}
	alerts := map[string]string{}
	for _, a := range u.Alerts {
		alerts[a.Resource] = string(a.Type)
	}
	if alerts["testRuns"] == "" || alerts["users"] == "" || alerts["projects"] != "" || alerts["storage"] != "" {
		t.Fatalf("alerts: %+v", u.Alerts)
	}
	// Next month the runs start again.
	f.clock.Advance(28 * 24 * time.Hour)
	if u, _ := f.svc.Usage(f.ctx, admin); u.RunsUsed != 0 {
		t.Fatalf("runs in June: %d", u.RunsUsed)
	}
}

func ptr[T any](v T) *T { return &v }
