package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/integrations"
	"verdict/internal/ports"
	"verdict/internal/ratelimit"
)

// stubIntegrations stands in for the trackers' service; a method a test does not set panics.
type stubIntegrations struct {
	ports.Trackers
	settings map[string]*integrations.Settings
	save     func(p *identity.Principal, provider string, in integrations.Input) (*integrations.Settings, error)
	remove   func(p *identity.Principal, provider string) (bool, error)
	ticket   func(p *identity.Principal, provider string, in integrations.TicketInput) (*integrations.Created, error)
}

func (s stubIntegrations) Settings(_ context.Context, _ *identity.Principal, provider string) (*integrations.Settings, error) {
	return s.settings[provider], nil
}

func (s stubIntegrations) Save(_ context.Context, p *identity.Principal, provider string, in integrations.Input) (*integrations.Settings, error) {
	return s.save(p, provider, in)
}

func (s stubIntegrations) Remove(_ context.Context, p *identity.Principal, provider string) (bool, error) {
	return s.remove(p, provider)
}

func (s stubIntegrations) CreateTicket(_ context.Context, p *identity.Principal, provider string, in integrations.TicketInput) (*integrations.Created, error) {
	return s.ticket(p, provider, in)
}

func newIntegrationsServer(in ports.Trackers) *Server {
	return New(Deps{Identity: stubIdentity{}, Trackers: in, JWT: testTokens{},
		Limiter: ratelimit.NewMemoryLimiter(domain.SystemClock), PublicURL: testPublicURL,
		Log: slog.New(slog.DiscardHandler), Clock: func() time.Time { return testNow }})
}

func TestIntegrationSettingsHandlers(t *testing.T) {
	var saved []integrations.Input
	s := newIntegrationsServer(stubIntegrations{
		settings: map[string]*integrations.Settings{"linear": {Values: map[string]string{}},
			"monday": {Configured: true, Enabled: false, Values: map[string]string{"boardId": "123"}}},
		save: func(p *identity.Principal, provider string, in integrations.Input) (*integrations.Settings, error) {
			if err := adminOnly(p); err != nil {
				return nil, err
			}
			if provider != "linear" {
				t.Fatalf("saved %s", provider)
			}
			saved = append(saved, in)
			return &integrations.Settings{Configured: true, Enabled: true, Values: map[string]string{"teamId": in.Values["teamId"]}}, nil
		},
		remove: func(p *identity.Principal, provider string) (bool, error) {
			if err := adminOnly(p); err != nil {
				return false, err
			}
			if provider == "trello" {
				return false, domain.BadRequest("Unknown provider", "provider must be one of ...")
			}
			return provider == "linear", nil
		},
	})
	expectJSON(t, call(s, "GET", "/api/integrations/linear", "viewer-1", ""), 200,
		`{"success":true,"data":{"enabled":false,"configured":false,"teamId":null}}`)
	expectJSON(t, call(s, "GET", "/api/integrations/monday", "viewer-1", ""), 200,
		`{"success":true,"data":{"enabled":false,"configured":true,"boardId":"123","groupId":null}}`)

	expectJSON(t, call(s, "PUT", "/api/integrations/linear", "admin-1", `{"apiKey":"lin_api_x","teamId":"team-1","enabled":true}`), 200,
		`{"success":true,"message":"Linear integration saved","data":{"enabled":true,"configured":true,"teamId":"team-1"}}`)
	if len(saved) != 1 || *saved[0].APIKey != "lin_api_x" || saved[0].Values["teamId"] != "team-1" || !*saved[0].Enabled {
		t.Fatalf("saved %+v", saved)
	}
	expectJSON(t, call(s, "PUT", "/api/integrations/linear", "admin-1", `{"teamId":"team-1","enabled":false,"apikey":"x"}`), 400,
		`{"success":false,"error":"Invalid request","message":"Unknown field \"apikey\""}`)
	expectJSON(t, call(s, "PUT", "/api/integrations/linear", "viewer-1", `{"apiKey":"lin_api_x"}`), 400,
		`{"success":false,"error":"Missing required fields","message":"teamId is required"}`)
	expectJSON(t, call(s, "PUT", "/api/integrations/linear", "dev-1", `{"apiKey":"lin_api_x","teamId":"team-1"}`), 403,
		`{"success":false,"error":"Forbidden","message":"This action needs the admin role"}`)
	// Settings are changed with a bearer token only.
	r := httptest.NewRequest("PUT", "/api/integrations/linear", strings.NewReader(`{"teamId":"team-1"}`))
	r.Header.Set("x-api-key", "pk_live_"+strings.Repeat("ab", 32))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "API key not allowed") {
		t.Fatalf("API key on PUT: %d %s", rec.Code, rec.Body)
	}

	expectJSON(t, call(s, "DELETE", "/api/integrations/linear", "admin-1", ""), 200,
		`{"success":true,"message":"Integration linear removed","removed":true}`)
	expectJSON(t, call(s, "DELETE", "/api/integrations/slack", "admin-1", ""), 200,
		`{"success":true,"message":"Integration slack had no stored credentials","removed":false}`)
	expectJSON(t, call(s, "DELETE", "/api/integrations/trello", "admin-1", ""), 400,
		`{"success":false,"error":"Unknown provider","message":"provider must be one of ..."}`)
	expectJSON(t, call(s, "DELETE", "/api/integrations/linear", "viewer-1", ""), 403,
		`{"success":false,"error":"Forbidden","message":"This action needs the admin role"}`)
	// A provider's settings are read and written only at its own path.
	expectJSON(t, call(s, "GET", "/api/integrations/slack", "admin-1", ""), 404,
		`{"success":false,"error":"Not found","message":"No such route: GET /api/integrations/slack"}`)
}

func TestTicketHandlers(t *testing.T) {
	created := time.Date(2026, 5, 4, 9, 59, 0, 0, time.UTC)
	var asked []integrations.TicketInput
	s := newIntegrationsServer(stubIntegrations{
		ticket: func(p *identity.Principal, provider string, in integrations.TicketInput) (*integrations.Created, error) {
			if provider == "monday" {
				return &integrations.Created{Ticket: domain.Ticket{Provider: "monday", ExternalID: "42",
					URL: "https://acme.monday.com/boards/1/pulses/42", Title: "Run failed", CreatedBy: p.UserID, CreatedAt: created},
					Warning: "The item was created, but the update with the run's details was not posted: Monday.com: too long"}, nil
			}
			asked = append(asked, in)
			if in.TaskID == "slow" {
				return nil, domain.UpstreamTimeout("Tracker timeout", "Linear did not answer within 15s")
			}
			return &integrations.Created{Ticket: domain.Ticket{Provider: "linear", ExternalID: "uuid-1", Identifier: "ENG-1",
				URL: "https://linear.app/acme/issue/eng-1", Title: "Run failed", CreatedBy: p.UserID, CreatedAt: created}}, nil
		},
	})
	expectJSON(t, call(s, "POST", "/api/linear/issues", "dev-1", `{"taskId":"nightly-42","title":"Run failed","description":"**why**"}`), 201,
		`{"success":true,"data":{"issueId":"uuid-1","issueUrl":"https://linear.app/acme/issue/eng-1","identifier":"ENG-1",
		"title":"Run failed","createdBy":"dev-1","createdAt":"2026-05-04T09:59:00.000Z"}}`)
	if len(asked) != 1 || asked[0] != (integrations.TicketInput{TaskID: "nightly-42", Title: "Run failed", Description: "**why**"}) {
		t.Fatalf("asked %+v", asked)
	}
	expectJSON(t, call(s, "POST", "/api/linear/issues", "viewer-1", `{"taskId":"nightly-42"}`), 201,
		`{"success":true,"data":{"issueId":"uuid-1","issueUrl":"https://linear.app/acme/issue/eng-1","identifier":"ENG-1",
		"title":"Run failed","createdBy":"viewer-1","createdAt":"2026-05-04T09:59:00.000Z"}}`)
	expectJSON(t, call(s, "POST", "/api/linear/issues", "dev-1", `{"taskId":"slow"}`), 504,
		`{"success":false,"error":"Tracker timeout","message":"Linear did not answer within 15s"}`)
	expectJSON(t, call(s, "POST", "/api/linear/issues", "dev-1", `{"taskId":"x","teamId":"y"}`), 400,
		`{"success":false,"error":"Invalid request","message":"Unknown field \"teamId\""}`)
	expectJSON(t, call(s, "POST", "/api/monday/items", "admin-1", `{"taskId":"nightly-42"}`), 201,
		`{"success":true,"data":{"itemId":"42","itemUrl":"https://acme.monday.com/boards/1/pulses/42","title":"Run failed",
		"createdBy":"admin-1","createdAt":"2026-05-04T09:59:00.000Z"},
		"warning":"The item was created, but the update with the run's details was not posted: Monday.com: too long"}`)

	off := newIntegrationsServer(nil)
	expectJSON(t, call(off, "POST", "/api/monday/items", "admin-1", `{"taskId":"nightly-42"}`), 503,
		`{"success":false,"error":"Integrations not configured","message":"Tracker integrations are not available on this server"}`)
}
