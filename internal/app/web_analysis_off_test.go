//go:build integration

package app_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
)

// A new organization's failure analysis is off: a failed run's page says so, and where it is
// turned on (a link to the setting for an admin; who can turn it on for the others), rather
// than only that the run has no analysis.
func TestWebFailedRunSaysAnalysisIsOff(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	admin := h.signup("off-admin@example.com", "Analysis Off Co")
	dev := h.join(admin, "off-dev@example.com", "developer")
	at := time.Now().UTC()
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: admin.orgID, TaskID: "failed-run", Image: "img",
		Status: domain.ExecFailed, QueuedAt: at, StartedAt: &at, FinishedAt: &at, TriggeredBy: admin.id}
	if err := h.app.Store.Executions().Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	signIn := func(email string) *browser {
		b := h.browser(t)
		b.get("/login")
		wantRedirect(t, "sign-in", b.post("/login", url.Values{"email": {email}, "password": {password}}), "/runs")
		return b
	}

	p := signIn(admin.email).get("/runs/failed-run")
	wantStatus(t, "failed run, admin", p, 200, "Failure analysis is off for this organization")
	if !strings.Contains(p.body, `href="/settings#analysis-setting"`) {
		t.Fatalf("the admin is not shown where to turn analysis on: %s", p.body)
	}
	p = signIn(dev.email).get("/runs/failed-run")
	wantStatus(t, "failed run, developer", p, 200, "An admin of the organization can turn it on")
	if strings.Contains(p.body, `href="/settings#analysis-setting"`) {
		t.Fatal("a developer is sent to a setting only admins change")
	}

	expect(t, h.do("PATCH", "/api/organization", bearer(admin.token), map[string]any{"aiAnalysisEnabled": true}), 200, "")
	p = signIn(admin.email).get("/runs/failed-run")
	wantStatus(t, "failed run, analysis on", p, 200, "This run has no analysis yet")
	if strings.Contains(p.body, "Failure analysis is off") {
		t.Fatal("the page says analysis is off once it is on")
	}
}
