//go:build integration

package app_test

import (
	"fmt"

	"strings"
	"testing"
	"time"
	"verdict/internal/api"
)

func TestSignupAndLogin(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		a := h.signup("ada@example.com", "Analytical Engines")
		if a.token == "" || a.orgID == "" {
			t.Fatal("signup returned no token or organization")
		}
		me := h.do("GET", "/api/auth/me", bearer(a.token), nil)
		expect(t, me, 200, "")
		if me.str("data", "role") != "admin" || me.str("data", "organization", "slug") != "analytical-engines" ||
			me.str("data", "organization", "plan") != "free" || me.get("data", "organization", "userCount") != 1.0 ||
			me.get("data", "organization", "limits", "maxTestRuns") != 100.0 {
			t.Fatalf("me: %s", me.raw)
		}
		if strings.Contains(me.raw, "password") || strings.Contains(me.raw, "$2a$") {
			t.Fatal("me leaks the password hash")
		}
		if subj, _ := h.lastMailTo("ada@example.com"); !strings.Contains(subj, "Welcome") {
			t.Fatalf("welcome mail subject %q", subj)
		}

		for _, c := range []struct {
			body map[string]any
			err  string
			code int
		}{
			{map[string]any{"email": "x@example.com", "password": password}, "Missing required fields", 400},
			{map[string]any{"email": "x@example.com", "password": password, "name": "X"}, "Missing required fields", 400},
			{map[string]any{"email": "not-an-email", "password": password, "name": "X", "organizationName": "Org"}, "Invalid email format", 400},
			{map[string]any{"email": "x@example.com", "password": "weakpass", "name": "X", "organizationName": "Org"}, "Weak password", 400},
			{map[string]any{"email": "x@example.com", "password": "NoSpecial123", "name": "X", "organizationName": "Org"}, "Weak password", 400},
			{map[string]any{"email": "x@example.com", "password": password, "name": "X", "inviteToken": strings.Repeat("a", 64)}, "Invalid invitation token", 400},
			{map[string]any{"email": "x@example.com", "password": password, "name": "X", "inviteToken": "short"}, "Invalid invitation token", 400},
			{map[string]any{"email": "ADA@example.com", "password": password, "name": "X", "organizationName": "Org"}, "Email already registered", 409},
		} {
			expect(t, h.do("POST", "/api/auth/signup", anon, c.body), c.code, c.err)
		}

		h.clock.Advance(time.Hour)
		r := h.do("POST", "/api/auth/login", anon, map[string]any{"email": "Ada@Example.com", "password": password})
		expect(t, r, 200, "")
		if r.str("user", "role") != "admin" || r.str("user", "organizationName") != "Analytical Engines" || r.str("token") == "" {
			t.Fatalf("login: %s", r.raw)
		}
		u := h.do("GET", "/api/users/"+a.id, bearer(a.token), nil)
		if u.str("user", "lastLoginAt") != "2026-03-10T10:00:00.000Z" {
			t.Fatalf("lastLoginAt not kept: %s", u.raw)
		}
		expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "ada@example.com"}), 400, "Missing credentials")
		expect(t, h.do("POST", "/api/auth/logout", bearer(a.token), nil), 200, "")
	})
}

func TestLockout(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		h.signup("bob@example.com", "Bobs")
		bad := map[string]any{"email": "bob@example.com", "password": "Wr0ng!pass"}
		for i := 1; i <= 5; i++ {
			r := h.do("POST", "/api/auth/login", anon, bad)
			expect(t, r, 401, "Invalid credentials")
			if r.get("attemptsRemaining") != float64(5-i) {
				t.Fatalf("failure %d: attemptsRemaining %v", i, r.get("attemptsRemaining"))
			}
		}
		good := map[string]any{"email": "bob@example.com", "password": password}
		r := h.do("POST", "/api/auth/login", anon, good)
		expect(t, r, 429, "Account temporarily locked")
		if ra, _ := r.get("retryAfter").(float64); ra < 890 || ra > 900 || r.header.Get("Retry-After") != fmt.Sprint(ra) {
			t.Fatalf("retryAfter %v, Retry-After %q", r.get("retryAfter"), r.header.Get("Retry-After"))
		}
		h.clock.Advance(14*time.Minute + 59*time.Second)
		expect(t, h.do("POST", "/api/auth/login", anon, good), 429, "Account temporarily locked")
		h.clock.Advance(time.Second)
		expect(t, h.do("POST", "/api/auth/login", anon, good), 200, "")
		// A success clears the counter: four more failures do not lock.
		for i := 0; i < 4; i++ {
			expect(t, h.do("POST", "/api/auth/login", anon, bad), 401, "Invalid credentials")
		}
		expect(t, h.do("POST", "/api/auth/login", anon, good), 200, "")
		// Failures spread over more than 15 minutes do not lock either.
		for i := 0; i < 4; i++ {
			expect(t, h.do("POST", "/api/auth/login", anon, bad), 401, "Invalid credentials")
		}
		h.clock.Advance(16 * time.Minute)
		r = h.do("POST", "/api/auth/login", anon, bad)
		if r.get("attemptsRemaining") != 4.0 {
			t.Fatalf("window did not restart: %s", r.raw)
		}
		// Unknown e-mails are counted too, with the same answer.
		expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "nobody@example.com", "password": password}), 401, "Invalid credentials")
	})
}

func TestSessionsFollowTheUser(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("admin@example.com", "Acme")
		dev := h.join(admin, "dev@example.com", "developer")
		expect(t, h.do("GET", "/api/invitations", bearer(dev.token), nil), 403, "Forbidden")

		// A promoted user acts with the new role at once, with the old token.
		expect(t, h.do("PATCH", "/api/users/"+dev.id+"/role", bearer(admin.token), map[string]any{"role": "admin"}), 200, "")
		expect(t, h.do("GET", "/api/invitations", bearer(dev.token), nil), 200, "")
		expect(t, h.do("PATCH", "/api/users/"+dev.id+"/role", bearer(admin.token), map[string]any{"role": "viewer"}), 200, "")
		expect(t, h.do("GET", "/api/invitations", bearer(dev.token), nil), 403, "Forbidden")

		// Suspended: refused at once, and cannot log in.
		expect(t, h.do("PATCH", "/api/users/"+dev.id+"/status", bearer(admin.token), map[string]any{"status": "suspended"}), 200, "")
		expect(t, h.do("GET", "/api/auth/me", bearer(dev.token), nil), 401, "Invalid or expired token")
		expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": dev.email, "password": password}), 403, "Account suspended")
		expect(t, h.do("PATCH", "/api/users/"+dev.id+"/status", bearer(admin.token), map[string]any{"status": "active"}), 200, "")
		expect(t, h.do("GET", "/api/auth/me", bearer(dev.token), nil), 200, "")

		// Deleted: refused at once.
		expect(t, h.do("DELETE", "/api/users/"+dev.id, bearer(admin.token), nil), 200, "")
		expect(t, h.do("GET", "/api/auth/me", bearer(dev.token), nil), 401, "Invalid or expired token")

		// Expired and forged tokens.
		expect(t, h.do("GET", "/api/auth/me", anon, nil), 401, "Authentication required")
		expect(t, h.do("GET", "/api/auth/me", bearer("not.a.jwt"), nil), 401, "Invalid or expired token")
		expect(t, h.do("GET", "/api/auth/me", anon, nil, "Authorization", "Basic Zm9vOmJhcg=="), 401, "Invalid or expired token")
		h.clock.Advance(24*time.Hour + time.Second)
		expect(t, h.do("GET", "/api/auth/me", bearer(admin.token), nil), 401, "Invalid or expired token")
	})
}

func TestUsersRules(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("root@example.com", "Rules Inc")
		viewer := h.join(admin, "viewer@example.com", "viewer")

		r := h.do("GET", "/api/users", bearer(viewer.token), nil)
		expect(t, r, 200, "")
		if users, _ := r.get("users").([]any); len(users) != 2 {
			t.Fatalf("users: %s", r.raw)
		}
		r = h.do("GET", "/api/users/"+admin.id, bearer(viewer.token), nil)
		expect(t, r, 200, "")
		for _, f := range []string{"id", "email", "name", "role", "status", "lastLoginAt", "createdAt"} {
			if _, ok := r.get("user").(map[string]any)[f]; !ok {
				t.Fatalf("user lacks %s: %s", f, r.raw)
			}
		}
		expect(t, h.do("PATCH", "/api/users/"+admin.id+"/role", bearer(viewer.token), map[string]any{"role": "viewer"}), 403, "Forbidden")
		expect(t, h.do("DELETE", "/api/users/"+admin.id, bearer(viewer.token), nil), 403, "Forbidden")
		expect(t, h.do("PATCH", "/api/users/"+admin.id+"/role", bearer(admin.token), map[string]any{"role": "viewer"}), 400, "Cannot change own role")
		expect(t, h.do("DELETE", "/api/users/"+admin.id, bearer(admin.token), nil), 400, "Cannot delete own account")
		expect(t, h.do("PATCH", "/api/users/"+viewer.id+"/role", bearer(admin.token), map[string]any{"role": "owner"}), 400, "Invalid role")
		expect(t, h.do("PATCH", "/api/users/"+viewer.id+"/role", bearer(admin.token), map[string]any{}), 400, "Missing required fields")
		expect(t, h.do("PATCH", "/api/users/unknown/role", bearer(admin.token), map[string]any{"role": "viewer"}), 404, "User not found")

		// Two admins: each may demote the other once; then the last admin cannot be demoted.
		r = h.do("PATCH", "/api/users/"+viewer.id+"/role", bearer(admin.token), map[string]any{"role": "admin"})
		expect(t, r, 200, "")
		if r.str("user", "role") != "admin" || r.str("user", "email") != viewer.email {
			t.Fatalf("role change answer: %s", r.raw)
		}
		expect(t, h.do("PATCH", "/api/users/"+admin.id+"/role", bearer(viewer.token), map[string]any{"role": "developer"}), 200, "")
		expect(t, h.do("PATCH", "/api/users/"+viewer.id+"/role", bearer(admin.token), map[string]any{"role": "developer"}), 403, "Forbidden")

		entries, err := h.app.Store.Audit().List(t.Context(), admin.orgID, 10)
		if err != nil {
			t.Fatal(err)
		}
		changes := 0
		for _, e := range entries {
			if e.Action == "user.role_changed" {
				changes++
			}
		}
		if changes != 2 {
			t.Fatalf("audit log has %d role changes, want 2", changes)
		}
	})
}

func TestLastAdminRace(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		a := h.signup("a@example.com", "Race")
		b := h.join(a, "b@example.com", "admin")
		// Each admin demotes the other at the same time: exactly one may win.
		codes := make(chan int, 2)
		go func() {
			codes <- h.do("PATCH", "/api/users/"+b.id+"/role", bearer(a.token), map[string]any{"role": "viewer"}).status
		}()
		go func() {
			codes <- h.do("PATCH", "/api/users/"+a.id+"/role", bearer(b.token), map[string]any{"role": "viewer"}).status
		}()
		got := []int{<-codes, <-codes}
		n, err := h.app.Store.Users().CountActiveByRole(t.Context(), a.orgID, "admin")
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("after the race %d admins remain (answers %v)", n, got)
		}
	})
}

func TestOrganizationSettingsAndUsage(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("owner@example.com", "Settings Co")
		dev := h.join(admin, "dev@example.com", "developer")

		r := h.do("GET", "/api/organization", bearer(dev.token), nil)
		expect(t, r, 200, "")
		if r.get("organization", "userCount") != 2.0 || r.get("organization", "userLimit") != 3.0 ||
			r.get("organization", "limits", "currentStorageUsedBytes") != 0.0 || r.get("organization", "aiAnalysisEnabled") != false {
			t.Fatalf("organization: %s", r.raw)
		}
		expect(t, h.do("PATCH", "/api/organization", bearer(dev.token), map[string]any{"name": "Hijack"}), 403, "Forbidden")
		expect(t, h.do("PATCH", "/api/organization", bearer(admin.token), map[string]any{"name": "X"}), 400, "Invalid organization name")
		expect(t, h.do("PATCH", "/api/organization", bearer(admin.token), map[string]any{"name": strings.Repeat("n", 101)}), 400, "Invalid organization name")
		expect(t, h.do("PATCH", "/api/organization", bearer(admin.token), map[string]any{"aiAnalysisEnabled": "yes"}), 400, "Validation error")
		r = h.do("PATCH", "/api/organization", bearer(admin.token), map[string]any{"name": "Settings Company", "aiAnalysisEnabled": true})
		expect(t, r, 200, "")
		if r.str("organization", "name") != "Settings Company" || r.get("organization", "aiAnalysisEnabled") != true {
			t.Fatalf("patch: %s", r.raw)
		}
		r = h.do("PATCH", "/api/organization/ai-analysis", bearer(admin.token), map[string]any{"enabled": false})
		expect(t, r, 200, "")
		if r.get("organization", "aiAnalysisEnabled") != false {
			t.Fatalf("ai-analysis: %s", r.raw)
		}
		expect(t, h.do("PATCH", "/api/organization/ai-analysis", bearer(admin.token), map[string]any{}), 400, "Missing required fields")
		r = h.do("PATCH", "/api/organization/features", bearer(admin.token), map[string]any{"aiFeatures": map[string]any{"automationPlanner": true}})
		expect(t, r, 200, "")
		if h.do("GET", "/api/organization", bearer(admin.token), nil).get("organization", "features", "aiFeatures", "automationPlanner") != true {
			t.Fatal("feature flag not stored")
		}
		entries, _ := h.app.Store.Audit().List(t.Context(), admin.orgID, 10)
		if len(entries) < 3 || entries[0].Action != "organization.updated" {
			t.Fatalf("settings changes not audited: %+v", entries)
		}

		r = h.do("GET", "/api/organization/usage", bearer(dev.token), nil)
		expect(t, r, 200, "")
		if r.str("usage", "currentPeriod", "startDate") != "2026-03-01T00:00:00.000Z" || r.str("usage", "currentPeriod", "endDate") != "2026-04-01T00:00:00.000Z" ||
			r.get("usage", "users", "active") != 2.0 || r.get("usage", "users", "limit") != 3.0 ||
			r.get("usage", "storage", "limitBytes") != float64(1<<30) || r.get("usage", "testRuns", "limit") != 100.0 {
			t.Fatalf("usage: %s", r.raw)
		}
		alerts := r.get("alerts").([]any)
		if len(alerts) != 1 || alerts[0].(map[string]any)["type"] != "info" || alerts[0].(map[string]any)["resource"] != "users" {
			t.Fatalf("2 of 3 users should raise one info alert: %s", r.raw)
		}
		h.join(admin, "third@example.com", "viewer")
		alerts = h.do("GET", "/api/organization/usage", bearer(dev.token), nil).get("alerts").([]any)
		if alerts[0].(map[string]any)["type"] != "critical" || alerts[0].(map[string]any)["percentUsed"] != 100.0 {
			t.Fatalf("3 of 3 users should be critical: %v", alerts)
		}
	})
}

func TestInvitations(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("boss@example.com", "Invite Co")
		other := h.signup("elsewhere@example.com", "Other Co")

		expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "x@example.com"}), 400, "Missing required fields")
		expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "nope", "role": "viewer"}), 400, "Invalid email format")
		expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "x@example.com", "role": "god"}), 400, "Invalid role")
		expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": admin.email, "role": "viewer"}), 409, "User already in organization")

		r := h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "new@example.com", "role": "developer"})
		expect(t, r, 201, "")
		if r.get("invitation", "userExists") != false || r.str("invitation", "actionType") != "signup" ||
			r.str("invitation", "expiresAt") != "2026-03-17T09:00:00.000Z" {
			t.Fatalf("invitation: %s", r.raw)
		}
		subject, text := h.lastMailTo("new@example.com")
		if !strings.Contains(subject, "Invite Co") || !strings.Contains(text, "http://verdict.test/") {
			t.Fatalf("invitation mail: %q %q", subject, text)
		}
		expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "NEW@example.com", "role": "viewer"}), 409, "Invitation already sent")

		// The alias route behaves the same; an existing account gets actionType join.
		h.clock.Advance(time.Second)
		r = h.do("POST", "/api/organizations/me/users/invite", bearer(admin.token), map[string]any{"email": other.email, "role": "viewer"})
		expect(t, r, 201, "")
		if r.get("invitation", "userExists") != true || r.str("invitation", "actionType") != "join" {
			t.Fatalf("alias invitation: %s", r.raw)
		}
		_, joinText := h.lastMailTo(other.email)
		joinToken := tokenInMail.FindStringSubmatch(joinText)[1]

		// Free plan: 1 member + 2 pending = 3 seats; a fourth is refused.
		expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "fourth@example.com", "role": "viewer"}), 403, "User limit reached")

		r = h.do("GET", "/api/invitations", bearer(admin.token), nil)
		expect(t, r, 200, "")
		list := r.get("invitations").([]any)
		if len(list) != 2 || list[0].(map[string]any)["email"] != other.email || list[0].(map[string]any)["status"] != "pending" ||
			list[0].(map[string]any)["invitedByName"] != "User boss@example.com" {
			t.Fatalf("list: %s", r.raw)
		}
		if strings.Contains(r.raw, "token") {
			t.Fatal("the invitation list exposes a token")
		}

		// Validate: format, unknown, valid.
		expect(t, h.do("GET", "/api/invitations/validate/xyz", anon, nil), 400, "Invalid token format")
		r = h.do("GET", "/api/invitations/validate/"+strings.Repeat("0", 64), anon, nil)
		expect(t, r, 404, "Invitation not found or already used")
		if r.get("valid") != false {
			t.Fatalf("validate 404 lacks valid:false: %s", r.raw)
		}
		r = h.do("GET", "/api/invitations/validate/"+joinToken, anon, nil)
		expect(t, r, 200, "")
		if r.get("valid") != true || r.str("organizationName") != "Invite Co" || r.str("role") != "viewer" ||
			r.str("inviterName") != "User boss@example.com" || r.get("userExists") != true {
			t.Fatalf("validate: %s", r.raw)
		}

		// Accept: wrong user, then the right one; the token is single use.
		expect(t, h.do("POST", "/api/invitations/accept", bearer(admin.token), map[string]any{"token": joinToken}), 403, "Email mismatch")
		expect(t, h.do("POST", "/api/invitations/accept", bearer(other.token), map[string]any{}), 400, "Missing token")
		expect(t, h.do("POST", "/api/invitations/accept", bearer(other.token), map[string]any{"token": "zz"}), 400, "Invalid token format")
		r = h.do("POST", "/api/invitations/accept", bearer(other.token), map[string]any{"token": joinToken})
		expect(t, r, 200, "")
		if r.str("organization", "id") != admin.orgID || r.str("organization", "name") != "Invite Co" {
			t.Fatalf("accept: %s", r.raw)
		}
		me := h.do("GET", "/api/auth/me", bearer(r.str("token")), nil)
		if me.str("data", "organization", "id") != admin.orgID || me.str("data", "role") != "viewer" {
			t.Fatalf("after accept: %s", me.raw)
		}
		expect(t, h.do("POST", "/api/invitations/accept", bearer(r.str("token")), map[string]any{"token": joinToken}), 404, "Invalid or expired invitation")
		expect(t, h.do("GET", "/api/invitations/validate/"+joinToken, anon, nil), 404, "Invitation not found or already used")

		// Revoke: the token stops validating; another organization cannot see it.
		r = h.do("GET", "/api/invitations", bearer(admin.token), nil)
		var pendingID string
		for _, it := range r.get("invitations").([]any) {
			if m := it.(map[string]any); m["status"] == "pending" {
				pendingID = m["id"].(string)
			}
		}
		expect(t, h.do("DELETE", "/api/invitations/not-an-id", bearer(admin.token), nil), 400, "Invalid invitation ID")
		stranger := h.signup("stranger@example.com", "Stranger Co")
		expect(t, h.do("DELETE", "/api/invitations/"+pendingID, bearer(stranger.token), nil), 404, "Invitation not found")
		expect(t, h.do("DELETE", "/api/invitations/"+pendingID, bearer(admin.token), nil), 200, "")
		expect(t, h.do("DELETE", "/api/invitations/"+pendingID, bearer(admin.token), nil), 400, "Invitation is not pending")
		r = h.do("GET", "/api/invitations", bearer(admin.token), nil)
		if !strings.Contains(r.raw, `"revoked"`) {
			t.Fatalf("revoked status not listed: %s", r.raw)
		}
	})
}

func TestInvitationExpiry(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("exp@example.com", "Expiry Co")
		_, tok := h.invite(admin, "late@example.com", "developer")
		h.clock.Advance(7*24*time.Hour - time.Second)
		expect(t, h.do("GET", "/api/invitations/validate/"+tok, anon, nil), 200, "")
		h.clock.Advance(time.Second)
		expect(t, h.do("GET", "/api/invitations/validate/"+tok, anon, nil), 404, "Invitation has expired")
		expect(t, h.do("POST", "/api/auth/signup", anon, map[string]any{"email": "late@example.com", "password": password, "name": "Late", "inviteToken": tok}), 400, "Invitation has expired")
		login := h.do("POST", "/api/auth/login", anon, map[string]any{"email": admin.email, "password": password})
		admin.token = login.str("token") // the first token expired days ago
		r := h.do("GET", "/api/invitations", bearer(admin.token), nil)
		if r.get("invitations").([]any)[0].(map[string]any)["status"] != "expired" {
			t.Fatalf("expired status: %s", r.raw)
		}
		// An expired invitation no longer blocks a new one.
		expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "late@example.com", "role": "developer"}), 201, "")
	})
}

func TestAPIKeys(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("ci@example.com", "CI Co")
		dev := h.join(admin, "dev@example.com", "developer")
		r := h.do("POST", "/api/auth/api-keys", bearer(dev.token), map[string]any{"name": "GitHub Actions"})
		expect(t, r, 201, "")
		key := r.str("apiKey")
		if !strings.HasPrefix(key, "pk_live_") || len(key) != 8+64 || r.str("data", "prefix") != key[:12] {
			t.Fatalf("api key: %s", r.raw)
		}
		expect(t, h.do("POST", "/api/auth/api-keys", bearer(dev.token), map[string]any{}), 400, "Missing required fields")

		me := h.do("GET", "/api/auth/me", apiKey(key), nil)
		expect(t, me, 200, "")
		if me.str("data", "email") != dev.email || me.str("data", "role") != "developer" {
			t.Fatalf("me by key: %s", me.raw)
		}
		// The key acts with the owner's current role.
		expect(t, h.do("PATCH", "/api/users/"+dev.id+"/role", bearer(admin.token), map[string]any{"role": "viewer"}), 200, "")
		if h.do("GET", "/api/auth/me", apiKey(key), nil).str("data", "role") != "viewer" {
			t.Fatal("the key did not follow the owner's role")
		}
		// Not for identity or settings management.
		expect(t, h.do("POST", "/api/auth/api-keys", apiKey(key), map[string]any{"name": "x"}), 403, "API key not allowed")
		expect(t, h.do("PATCH", "/api/organization", apiKey(key), map[string]any{"name": "Keyed"}), 403, "API key not allowed")
		expect(t, h.do("POST", "/api/invitations", apiKey(key), map[string]any{"email": "k@example.com", "role": "viewer"}), 403, "API key not allowed")

		list := h.do("GET", "/api/auth/api-keys", bearer(dev.token), nil)
		keys := list.get("data").([]any)
		if len(keys) != 1 || keys[0].(map[string]any)["lastUsedAt"] == nil || strings.Contains(list.raw, key) {
			t.Fatalf("key list: %s", list.raw)
		}
		expect(t, h.do("GET", "/api/auth/api-keys?all=true", bearer(dev.token), nil), 403, "Forbidden")
		if n := len(h.do("GET", "/api/auth/api-keys?all=true", bearer(admin.token), nil).get("data").([]any)); n != 1 {
			t.Fatalf("admin sees %d keys, want 1", n)
		}
		id := keys[0].(map[string]any)["id"].(string)
		outsider := h.signup("out@example.com", "Out Co")
		expect(t, h.do("DELETE", "/api/auth/api-keys/"+id, bearer(outsider.token), nil), 404, "API key not found")
		expect(t, h.do("DELETE", "/api/auth/api-keys/"+id, bearer(dev.token), nil), 200, "")
		expect(t, h.do("GET", "/api/auth/me", apiKey(key), nil), 401, "Invalid API key")
		expect(t, h.do("GET", "/api/auth/me", apiKey("pk_live_nonsense"), nil), 401, "Invalid API key")
	})
}

// TestTenantIsolation calls every route that names a resource with another organization's
// credentials: each must answer 404 and change nothing.
func TestTenantIsolation(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		a := h.signup("a@tenant-a.com", "Tenant A")
		aDev := h.join(a, "dev@tenant-a.com", "developer")
		invID, _ := h.invite(a, "pending@tenant-a.com", "viewer")
		k := h.do("POST", "/api/auth/api-keys", bearer(a.token), map[string]any{"name": "A key"})
		keyID := k.str("data", "id")

		b := h.signup("b@tenant-b.com", "Tenant B")
		for _, c := range []struct {
			method, path string
			body         any
			err          string
		}{
			{"GET", "/api/users/" + aDev.id, nil, "User not found"},
			{"PATCH", "/api/users/" + aDev.id + "/role", map[string]any{"role": "viewer"}, "User not found"},
			{"PATCH", "/api/users/" + aDev.id + "/status", map[string]any{"status": "suspended"}, "User not found"},
			{"DELETE", "/api/users/" + aDev.id, nil, "User not found"},
			{"DELETE", "/api/invitations/" + invID, nil, "Invitation not found"},
			{"DELETE", "/api/auth/api-keys/" + keyID, nil, "API key not found"},
		} {
			expect(t, h.do(c.method, c.path, bearer(b.token), c.body), 404, c.err)
		}
		for _, path := range []string{"/api/users", "/api/invitations", "/api/auth/api-keys?all=true", "/api/organization", "/api/organization/usage"} {
			r := h.do("GET", path, bearer(b.token), nil)
			expect(t, r, 200, "")
			for _, leak := range []string{a.orgID, aDev.email, "pending@tenant-a.com", keyID, "Tenant A"} {
				if strings.Contains(r.raw, leak) {
					t.Fatalf("GET %s as B shows A's %q: %s", path, leak, r.raw)
				}
			}
		}
		// Nothing changed on A's side.
		if u := h.do("GET", "/api/users/"+aDev.id, bearer(a.token), nil); u.str("user", "role") != "developer" || u.str("user", "status") != "active" {
			t.Fatalf("B changed A's user: %s", u.raw)
		}
		if n := len(h.do("GET", "/api/invitations", bearer(a.token), nil).get("invitations").([]any)); n != 2 {
			t.Fatalf("A's invitations: %d", n)
		}
	})
}

func TestBadInput(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	a := h.signup("input@example.com", "Input Co")
	for _, c := range []struct {
		name, method, path, body, err string
	}{
		{"malformed", "POST", "/api/auth/signup", `{"email":`, "Invalid JSON"},
		{"not an object", "POST", "/api/auth/login", `[1,2]`, "Invalid JSON"},
		{"empty", "POST", "/api/auth/login", ``, "Invalid JSON"},
		{"trailing", "POST", "/api/auth/login", `{"email":"a@b.co","password":"x"} {}`, "Invalid JSON"},
		{"wrong type", "POST", "/api/auth/signup", `{"email":42,"password":"x","name":"n","organizationName":"o"}`, "Validation error"},
		{"wrong type nested", "PATCH", "/api/organization/features", `{"aiFeatures":{"automationPlanner":"on"}}`, "Validation error"},
		{"unknown enum", "PATCH", "/api/users/x/role", `{"role":"superuser"}`, "Invalid role"},
		{"oversize", "POST", "/api/auth/signup", `{"name":"` + strings.Repeat("a", 2<<20) + `"}`, "Request body too large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			expect(t, h.do(c.method, c.path, bearer(a.token), c.body), 400, c.err)
		})
	}
	expect(t, h.do("GET", "/api/no-such-route", anon, nil), 404, "Not found")
}

func TestRateLimits(t *testing.T) {
	for _, redis := range []bool{false, true} {
		t.Run(fmt.Sprintf("redis=%v", redis), func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: "sqlite", redis: redis, rateLimits: api.DefaultRateLimits(), env: map[string]string{"VERDICT_TRUSTED_PROXIES": "127.0.0.1/32"}})
			// Each attempt uses another e-mail so the per-e-mail lockout stays out of the way.
			n := 0
			body := func() map[string]any {
				n++
				return map[string]any{"email": fmt.Sprintf("u%d@example.com", n), "password": "x"}
			}
			for i := 1; i <= 5; i++ {
				r := h.do("POST", "/api/auth/login", anon, body(), "X-Forwarded-For", "203.0.113.7")
				if r.header.Get("X-RateLimit-Limit") != "5" || r.header.Get("X-RateLimit-Remaining") != fmt.Sprint(5-i) {
					t.Fatalf("attempt %d headers: %v", i, r.header)
				}
			}
			r := h.do("POST", "/api/auth/login", anon, body(), "X-Forwarded-For", "203.0.113.7")
			expect(t, r, 429, "Rate limit exceeded")
			if r.get("retryAfter") == nil || r.header.Get("Retry-After") == "" {
				t.Fatalf("429 lacks retryAfter: %s", r.raw)
			}
			// The bucket is full again a minute after the first attempt; on Redis, whose clock moves
			// for real while logins hash passwords, up to a second sooner.
			full := h.clock.Now().Add(time.Minute).Unix()
			if reset := r.header.Get("X-RateLimit-Reset"); reset != fmt.Sprint(full) && !(redis && reset == fmt.Sprint(full-1)) {
				t.Fatalf("X-RateLimit-Reset %s", reset)
			}
			// Another client address has its own bucket; signup is a separate bucket.
			expect(t, h.do("POST", "/api/auth/login", anon, body(), "X-Forwarded-For", "203.0.113.8"), 401, "Invalid credentials")
			expect(t, h.do("POST", "/api/auth/signup", anon, map[string]any{}, "X-Forwarded-For", "203.0.113.7"), 400, "Missing required fields")
			// A spoofed left-most hop does not buy a new bucket.
			expect(t, h.do("POST", "/api/auth/login", anon, body(), "X-Forwarded-For", "1.2.3.4, 203.0.113.7"), 429, "Rate limit exceeded")
			// The bucket refills one request per 12 s (5 a minute), not a whole window at once. Redis's
			// limiter keeps Redis's clock, which the test cannot move (TestRateLimitsRedisRefill).
			if !redis {
				h.clock.Advance(12*time.Second - time.Millisecond)
				expect(t, h.do("POST", "/api/auth/login", anon, body(), "X-Forwarded-For", "203.0.113.7"), 429, "Rate limit exceeded")
				h.clock.Advance(time.Millisecond)
				expect(t, h.do("POST", "/api/auth/login", anon, body(), "X-Forwarded-For", "203.0.113.7"), 401, "Invalid credentials")
				expect(t, h.do("POST", "/api/auth/login", anon, body(), "X-Forwarded-For", "203.0.113.7"), 429, "Rate limit exceeded")
			}

			// Invitations: 5 per minute per organization.
			admin := h.signup("limits@example.com", "Limits Co")
			for i := 0; i < 5; i++ {
				r := h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "bad", "role": "viewer"})
				expect(t, r, 400, "Invalid email format")
			}
			expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "bad", "role": "viewer"}), 429, "Rate limit exceeded")
			// Another route's bucket is untouched.
			me := h.do("GET", "/api/auth/me", bearer(admin.token), nil)
			expect(t, me, 200, "")
			if me.header.Get("X-RateLimit-Limit") != "100" {
				t.Fatalf("me limit header %q", me.header.Get("X-RateLimit-Limit"))
			}
		})
	}
}

// A suspended admin cannot run the organization: the last-admin rules count active admins.
func TestSuspendedAdminsDoNotCountAsAdmins(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	a := h.signup("a@example.com", "Org A")
	b := h.join(a, "b@example.com", "admin")
	h.join(a, "c@example.com", "developer")
	expect(t, h.do("PATCH", "/api/users/"+b.id+"/status", bearer(a.token), map[string]any{"status": "suspended"}), 200, "")

	// a is the only active admin: leaving for another organization is refused.
	x := h.signup("x@example.com", "Org X")
	h.clock.Advance(time.Second)
	_, token := h.invite(x, a.email, "developer")
	expect(t, h.do("POST", "/api/invitations/accept", bearer(a.token), map[string]any{"token": token}), 400, "Cannot leave as the last admin")

	// The suspended admin can be removed: a still runs the organization.
	expect(t, h.do("DELETE", "/api/users/"+b.id, bearer(a.token), nil), 200, "")
}
