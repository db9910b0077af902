//go:build integration

package app_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// The organization settings: an admin renames the organization and toggles the two AI flags
// through the form (with its CSRF token); a viewer sees no form and a forged post is refused.
func TestWebSettingsOrganization(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	b := h.signUpBrowser(t, "ada@example.com", "Settings Co")
	admin := account{token: b.session()}
	orgID := h.do("GET", "/api/auth/me", bearer(admin.token), nil).str("data", "organization", "id")

	p := b.get("/settings")
	for _, want := range []string{`action="/settings/organization"`, `value="Settings Co"`, `name="aiAnalysis"`,
		`name="automationPlanner"`, `href="/settings" aria-current="page"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("settings page lacks %q: %s", want, p.body)
		}
	}
	form := url.Values{"name": {"Renamed Co"}, "aiAnalysis": {"on"}, "automationPlanner": {"on"}}
	wantStatus(t, "settings without CSRF", b.post("/settings/organization", url.Values{"csrf": {""}, "name": {"Forged"}}), 403, "Request refused")
	b.follow("save settings", b.post("/settings/organization", form), 200, "Organization settings saved.")
	org := h.org(orgID)
	if org.Name != "Renamed Co" || !org.AIAnalysisEnabled || !org.Features.AIFeatures.AutomationPlanner {
		t.Fatalf("after saving: %+v", org)
	}
	p = b.get("/settings")
	if !strings.Contains(p.body, `name="aiAnalysis" checked`) || !strings.Contains(p.body, `name="automationPlanner" checked`) {
		t.Fatalf("flags not shown on: %s", p.body)
	}
	// Unticked checkboxes are not sent: both flags go off.
	b.follow("flags off", b.post("/settings/organization", url.Values{"name": {"Renamed Co"}}), 200, "Organization settings saved.")
	if org = h.org(orgID); org.AIAnalysisEnabled || org.Features.AIFeatures.AutomationPlanner {
		t.Fatalf("flags still on: %+v", org)
	}
	// The service's refusal comes back as a message.
	b.get("/settings")
	b.follow("empty name", b.post("/settings/organization", url.Values{"name": {" "}}), 200, "Invalid organization name")

	viewer := h.withSession(t, h.join(account{token: admin.token}, "vic@example.com", "viewer").token)
	p = viewer.get("/settings")
	wantStatus(t, "viewer settings", p, 200, "Renamed Co")
	if strings.Contains(p.body, `action="/settings/`) || !strings.Contains(p.body, "Only admins change these settings") {
		t.Fatalf("a viewer sees forms: %s", p.body)
	}
	wantStatus(t, "viewer's forged post", viewer.post("/settings/organization", url.Values{"name": {"Viewer Co"}}), 403, "Forbidden")
	wantStatus(t, "viewer's forged key", viewer.post("/settings/ai/key", url.Values{"provider": {"openai"}, "apiKey": {"sk-x"}}), 403, "Forbidden")
	if h.org(orgID).Name != "Renamed Co" {
		t.Fatal("a viewer renamed the organization")
	}
}

// The model settings: a key the provider refuses is not saved and its error is shown; a good
// one is saved, never shown back, offers the provider's model, and can be removed.
func TestWebSettingsAIConfig(t *testing.T) {
	fake := &fakeOpenAI{key: "sk-good-0123456789"}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}})
	b := h.signUpBrowser(t, "ada@example.com", "Model Co")

	p := b.get("/settings")
	for _, want := range []string{`action="/settings/ai/model"`, `<option value="builtin" selected>builtin</option>`,
		`action="/settings/ai/key"`, `id="key-openai" name="apiKey" type="password"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("settings page lacks %q: %s", want, p.body)
		}
	}
	if strings.Contains(p.body, "/settings/ai/remove-key") {
		t.Fatalf("a remove button without an own key: %s", p.body)
	}
	b.follow("bad key", b.post("/settings/ai/key", url.Values{"provider": {"openai"}, "apiKey": {"sk-wrong"}}), 200, "Invalid API key")
	if strings.Contains(b.get("/settings").body, "configured") {
		t.Fatal("a refused key shows as configured")
	}
	p = b.follow("good key", b.post("/settings/ai/key", url.Values{"provider": {"openai"}, "apiKey": {fake.key}}), 200, "key was checked with the provider and saved")
	if strings.Contains(p.body, fake.key) || !strings.Contains(p.body, "<td>openai</td><td>configured</td>") ||
		!strings.Contains(p.body, `<option value="openai:gpt-5.4-mini" selected>`) || !strings.Contains(p.body, "Remove own openai key") {
		t.Fatalf("after saving the key: %s", p.body)
	}
	b.follow("default model", b.post("/settings/ai/model", url.Values{"defaultModel": {"builtin"}}), 200, "Default model set to builtin.")
	b.follow("unknown model", b.post("/settings/ai/model", url.Values{"defaultModel": {"gemini:x"}}), 200, "needs an API key")
	p = b.follow("remove key", b.post("/settings/ai/remove-key", url.Values{"provider": {"openai"}}), 200, "key was removed")
	if strings.Contains(p.body, "<td>openai</td><td>configured</td>") {
		t.Fatalf("after removing the key: %s", p.body)
	}
}

// Billing actions: without payments set up the buttons are hidden with a note; against
// stripe-mock the checkout and portal buttons send the browser to the provider, by a 303 or,
// for htmx, HX-Redirect. Members other than admins get neither the buttons nor the history.
func TestWebBillingActions(t *testing.T) {
	plain := newHarness(t, harnessOpts{dialect: "sqlite"})
	p := plain.signUpBrowser(t, "ada@example.com", "Free Co").get("/settings/billing")
	wantStatus(t, "billing not configured", p, 200, "Payments are not set up on this server")
	if strings.Contains(p.body, "/settings/billing/checkout") {
		t.Fatalf("checkout without payments: %s", p.body)
	}

	h := newHarness(t, harnessOpts{dialect: "sqlite", env: billingEnv(t, nil)})
	b := h.signUpBrowser(t, "ada@example.com", "Paying Co")
	admin := account{token: b.session()}
	p = b.get("/settings/billing")
	for _, want := range []string{"Upgrade to team", "Upgrade to enterprise", "No payment events yet", `hx-post="/settings/billing/checkout"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("billing page lacks %q: %s", want, p.body)
		}
	}
	if strings.Contains(p.body, "Manage billing") {
		t.Fatalf("a portal button without a billing account: %s", p.body)
	}
	wantStatus(t, "checkout without CSRF", b.post("/settings/billing/checkout", url.Values{"csrf": {""}, "plan": {"team"}}), 403, "Request refused")
	r := b.post("/settings/billing/checkout", url.Values{"plan": {"team"}})
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "https://") {
		t.Fatalf("checkout: %d to %q", r.status, r.header.Get("Location"))
	}
	p = b.get("/settings/billing")
	if !strings.Contains(p.body, "Manage billing") {
		t.Fatalf("no portal button with a billing account: %s", p.body)
	}
	r = b.post("/settings/billing/portal", nil)
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "https://") {
		t.Fatalf("portal: %d to %q", r.status, r.header.Get("Location"))
	}
	// htmx submits the forms and navigates on HX-Redirect (a form's own redirect to another
	// site would break the page's form-action 'self').
	req, _ := http.NewRequest("POST", h.srv.URL+"/settings/billing/portal", strings.NewReader(url.Values{"csrf": {b.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	if r = b.send(req); r.status != http.StatusNoContent || !strings.HasPrefix(r.header.Get("HX-Redirect"), "https://") {
		t.Fatalf("portal by htmx: %d %v", r.status, r.header)
	}
	b.follow("unknown plan", b.post("/settings/billing/checkout", url.Values{"plan": {"free"}}), 200, "Invalid plan")

	dev := h.withSession(t, h.join(admin, "dev@example.com", "developer").token)
	p = dev.get("/settings/billing")
	wantStatus(t, "developer's billing", p, 200, "Only admins change the plan")
	if strings.Contains(p.body, "/settings/billing/") || strings.Contains(p.body, "Payment history") {
		t.Fatalf("a developer sees billing actions: %s", p.body)
	}
	wantStatus(t, "developer's forged checkout", dev.post("/settings/billing/checkout", url.Values{"plan": {"team"}}), 403, "Forbidden")
}
