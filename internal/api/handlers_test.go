package api

// Handler tests: a Server over small stand-ins for the services (no database, no Docker), so a
// test pins what the API itself does with a request and with a service's answer: the 400s it
// answers before any service is called, a service's error as its status and body, and the
// typed views it encodes. What a service decides (roles included) is the stand-in's to say;
// the end-to-end tests in internal/app run the real services.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"verdict/internal/auth"
	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/ports"
	"verdict/internal/ratelimit"
	"verdict/internal/store"
)

const (
	testOrg       = "64b7f0c2a1e4d5f6a7b8c9d0"
	testPublicURL = "https://verdict.example"
)

// testNow is the servers' clock: durations of running runs are measured to it.
var testNow = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// testRoles are the members of testOrg; a bearer token is simply a member's user ID.
var testRoles = map[string]domain.Role{"admin-1": domain.RoleAdmin, "dev-1": domain.RoleDeveloper, "viewer-1": domain.RoleViewer}

type testTokens struct{}

func (testTokens) Verify(token string) (auth.Claims, error) {
	role, ok := testRoles[token]
	if !ok {
		return auth.Claims{}, errors.New("unknown token")
	}
	return auth.Claims{UserID: token, OrganizationID: testOrg, Role: role}, nil
}

// stubIdentity authenticates testRoles' members; the methods a test uses are set per test, and
// any other (nil embedded interface) panics, which the server answers 500.
type stubIdentity struct {
	ports.Identity
	changeRole func(p *identity.Principal, id string, role domain.Role) (*domain.User, error)
}

func (stubIdentity) AuthenticateClaims(_ context.Context, userID, orgID string) (*identity.Principal, error) {
	role := testRoles[userID]
	return &identity.Principal{UserID: userID, OrgID: orgID, Role: role,
		User: &domain.User{ID: userID, OrganizationID: orgID, Email: userID + "@example.com", Role: role, Status: domain.UserActive}}, nil
}

func (s stubIdentity) ChangeRole(_ context.Context, p *identity.Principal, id string, role domain.Role) (*domain.User, error) {
	return s.changeRole(p, id, role)
}

type stubExecutions struct {
	ports.Executions
	queue func(p *identity.Principal, in executions.QueueInput) (*domain.Execution, error)
	list  func(p *identity.Principal, f store.ExecutionFilter) ([]domain.Execution, int, error)
	get   func(p *identity.Principal, taskID string) (*domain.Execution, error)
}

func (s stubExecutions) Queue(_ context.Context, p *identity.Principal, in executions.QueueInput) (*domain.Execution, error) {
	return s.queue(p, in)
}

func (s stubExecutions) List(_ context.Context, p *identity.Principal, f store.ExecutionFilter) ([]domain.Execution, int, error) {
	return s.list(p, f)
}

func (s stubExecutions) Get(_ context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	return s.get(p, taskID)
}

type stubBilling struct {
	ports.Billing
	startCheckout func(p *identity.Principal, priceID, planID string) (*billing.Checkout, error)
	events        func(p *identity.Principal, limit int) ([]store.BillingEvent, error)
}

func (s stubBilling) StartCheckout(_ context.Context, p *identity.Principal, priceID, planID string) (*billing.Checkout, error) {
	return s.startCheckout(p, priceID, planID)
}

func (s stubBilling) Events(_ context.Context, p *identity.Principal, limit int) ([]store.BillingEvent, error) {
	return s.events(p, limit)
}

// adminOnly is what the real services do first in an admin-only operation.
func adminOnly(p *identity.Principal) error { return p.RequireAdmin() }

func newHandlerServer(ids ports.Identity, execs ports.Executions, bill ports.Billing) *Server {
	if ids == nil {
		ids = stubIdentity{}
	}
	return New(Deps{Identity: ids, Executions: execs, Billing: bill, JWT: testTokens{},
		Limiter: ratelimit.NewMemoryLimiter(domain.SystemClock), PublicURL: testPublicURL,
		Log: slog.New(slog.DiscardHandler), Clock: func() time.Time { return testNow }})
}

// call sends one request through the whole server as the member token (a user ID of testRoles).
func call(s *Server, method, path, token, body string) *httptest.ResponseRecorder {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, path, nil)
	} else {
		r = httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	}
	r.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	return rec
}

// expectJSON fails unless the answer has the status and its body is the JSON want (any key order).
func expectJSON(t *testing.T, rec *httptest.ResponseRecorder, status int, want string) {
	t.Helper()
	var got, exp any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %s", rec.Code, err, rec.Body)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("the test's want is not JSON: %v", err)
	}
	if rec.Code != status || !reflect.DeepEqual(got, exp) {
		t.Fatalf("answer %d %s\nwant   %d %s", rec.Code, rec.Body, status, want)
	}
}

// finishedRun is a failed run with tests and one report folder that opens.
func finishedRun() domain.Execution {
	started, finished, exit := testNow.Add(-90*time.Second), testNow.Add(-30*time.Second), 1
	return domain.Execution{ID: "0123456789abcdef01234567", OrganizationID: testOrg, TaskID: "nightly-42",
		Image: "registry.example.com/suite:1", Environment: "staging", BaseURL: "https://staging.example",
		TimeoutSeconds: 600, EnvNames: []string{"TOKEN"}, TriggeredBy: "dev-1", Status: domain.ExecFailed,
		ExitCode: &exit, QueuedAt: testNow.Add(-2 * time.Minute), StartedAt: &started, FinishedAt: &finished,
		RunnerID: "remote:ci-1", Summary: domain.Summary{Total: 2, Passed: 1, Failed: 1},
		Tests: []domain.TestResult{{Name: "logs in", Suite: "auth", Status: domain.TestPassed, DurationMs: 1200},
			{Name: "pays", Suite: "billing", Status: domain.TestFailed, DurationMs: 800, Error: "expected 200"}},
		ReportDirs: []string{"playwright-report", "junit"}, ReportIndexes: []string{"playwright-report"}, ReportBytes: 2048,
		// Tickets show on the full view only.
		Tickets: []domain.Ticket{
			{ID: "t1", Provider: "linear", ExternalID: "9f0e0001-0000-4000-8000-000000000000", Identifier: "ENG-7",
				URL: "https://linear.app/acme/issue/eng-7", Title: "Checkout fails", CreatedBy: "dev-1", CreatedAt: testNow.Add(-10 * time.Second)},
			{ID: "t2", Provider: "monday", ExternalID: "9000000001", URL: "https://acme.monday.com/boards/1/pulses/9000000001",
				Title: "Checkout fails", CreatedBy: "admin-1", CreatedAt: testNow.Add(-5 * time.Second)}}}
}

// finishedItem is finishedRun's list item; finishedView its full view.
const finishedItem = `{"taskId":"nightly-42","organizationId":"64b7f0c2a1e4d5f6a7b8c9d0","projectId":null,
	"image":"registry.example.com/suite:1","command":"","environment":"staging","baseUrl":"https://staging.example",
	"folder":"all","timeoutSeconds":600,"envVarNames":["TOKEN"],"status":"FAILED","queueReason":null,"error":null,
	"exitCode":1,"queuedAt":"2026-05-04T09:58:00.000Z","startedAt":"2026-05-04T09:58:30.000Z",
	"finishedAt":"2026-05-04T09:59:30.000Z","durationMs":60000,"triggeredBy":"dev-1","viaApiKey":false,
	"labels":{},"cancelRequested":false,"runner":"remote:ci-1","summary":{"total":2,"passed":1,"failed":1,"skipped":0,"flaky":0},
	"reportFolders":["playwright-report","junit"],"reportBytes":2048,"notes":[],
	"htmlReportUrl":"https://verdict.example/reports/64b7f0c2a1e4d5f6a7b8c9d0/nightly-42/playwright-report/",
	"allureReportUrl":null,
	"artifacts":["https://verdict.example/reports/64b7f0c2a1e4d5f6a7b8c9d0/nightly-42/playwright-report/"],
	"gate":null,"pinned":false,"filesExpiredAt":null,"quarantinedFailures":[],"testsRecorded":false,"shardTotal":0,"retries":0`

const finishedView = finishedItem + `,"tests":[
	{"name":"logs in","suite":"auth","status":"passed","durationMs":1200,"retries":0},
	{"name":"pays","suite":"billing","status":"failed","durationMs":800,"error":"expected 200","retries":0}],
	"testsNotKept":0,"testsOmitted":0,
	"analysis":null,"shards":[],
	"trackerAIssues":[{"issueId":"9f0e0001-0000-4000-8000-000000000000","issueUrl":"https://linear.app/acme/issue/eng-7",
		"identifier":"ENG-7","title":"Checkout fails","createdBy":"dev-1","createdAt":"2026-05-04T09:59:50.000Z"}],
	"trackerBItems":[{"itemId":"9000000001","itemUrl":"https://acme.monday.com/boards/1/pulses/9000000001",
		"title":"Checkout fails","createdBy":"admin-1","createdAt":"2026-05-04T09:59:55.000Z"}],
	"jiraIssues":[],
	"tickets":[{"provider":"linear","id":"9f0e0001-0000-4000-8000-000000000000","identifier":"ENG-7",
		"url":"https://linear.app/acme/issue/eng-7","title":"Checkout fails","createdAt":"2026-05-04T09:59:50.000Z"},
		{"provider":"monday","id":"9000000001","identifier":"","url":"https://acme.monday.com/boards/1/pulses/9000000001",
		"title":"Checkout fails","createdAt":"2026-05-04T09:59:55.000Z"}]}`

// runningRun is a run started 10 s before testNow, waiting on nothing.
func runningRun() domain.Execution {
	started := testNow.Add(-10 * time.Second)
	return domain.Execution{ID: "0123456789abcdef01234568", OrganizationID: testOrg, TaskID: "run-abc",
		ProjectID: "64b7f0c2a1e4d5f6a7b8c9d1", Image: "suite", Command: "npx playwright test", TimeoutSeconds: 1800,
		TriggeredBy: "admin-1", ViaAPIKey: true, Status: domain.ExecRunning, QueuedAt: testNow.Add(-20 * time.Second),
		StartedAt: &started, RunnerID: "remote:ci-2"}
}

const runningItem = `{"taskId":"run-abc","organizationId":"64b7f0c2a1e4d5f6a7b8c9d0","projectId":"64b7f0c2a1e4d5f6a7b8c9d1",
	"image":"suite","command":"npx playwright test","environment":"","baseUrl":"","folder":"all","timeoutSeconds":1800,
	"envVarNames":[],"status":"RUNNING","queueReason":null,"error":null,"exitCode":null,
	"queuedAt":"2026-05-04T09:59:40.000Z","startedAt":"2026-05-04T09:59:50.000Z","finishedAt":null,"durationMs":10000,
	"triggeredBy":"admin-1","viaApiKey":true,"labels":{},"cancelRequested":false,"runner":"remote:ci-2",
	"summary":{"total":0,"passed":0,"failed":0,"skipped":0,"flaky":0},"reportFolders":[],"reportBytes":0,"notes":[],
	"htmlReportUrl":null,"allureReportUrl":null,"artifacts":[],"gate":null,"pinned":false,"filesExpiredAt":null,"quarantinedFailures":[],"testsRecorded":false,"shardTotal":0,"retries":0}`

func TestListExecutionsHandler(t *testing.T) {
	t.Run("QueryRefusedBeforeTheService", func(t *testing.T) {
		s := newHandlerServer(nil, stubExecutions{list: func(*identity.Principal, store.ExecutionFilter) ([]domain.Execution, int, error) {
			t.Error("the service was called with an invalid query")
			return nil, 0, nil
		}}, nil)
		for query, msg := range map[string]string{
			"limit=0":    "limit must be an integer from 1 to 100",
			"limit=101":  "limit must be an integer from 1 to 100",
			"limit=ten":  "limit must be an integer from 1 to 100",
			"offset=-1":  "offset must be an integer from 0 to 1073741824",
			"offset=1.5": "offset must be an integer from 0 to 1073741824",
		} {
			expectJSON(t, call(s, "GET", "/api/executions?"+query, "viewer-1", ""), 400,
				`{"success":false,"error":"Validation error","message":"`+msg+`"}`)
		}
	})

	t.Run("FilterAndPage", func(t *testing.T) {
		var got store.ExecutionFilter
		s := newHandlerServer(nil, stubExecutions{list: func(p *identity.Principal, f store.ExecutionFilter) ([]domain.Execution, int, error) {
			if p.OrgID != testOrg || p.UserID != "viewer-1" {
				t.Errorf("principal %+v", p)
			}
			got = f
			return []domain.Execution{finishedRun(), runningRun()}, 7, nil
		}}, nil)
		rec := call(s, "GET", "/api/executions?status=failed,%20running&projectId=p1&image=suite&limit=2&offset=4", "viewer-1", "")
		expectJSON(t, rec, 200, `{"success":true,"data":{"executions":[`+finishedItem+`},`+runningItem+`],"total":7,"limit":2,"offset":4}}`)
		want := store.ExecutionFilter{ProjectID: "p1", Image: "suite", Statuses: []domain.ExecStatus{domain.ExecFailed, domain.ExecRunning}, Limit: 2, Offset: 4}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("filter %+v, want %+v", got, want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
	})

	t.Run("DefaultPage", func(t *testing.T) {
		s := newHandlerServer(nil, stubExecutions{list: func(_ *identity.Principal, f store.ExecutionFilter) ([]domain.Execution, int, error) {
			if f.Limit != 25 || f.Offset != 0 || f.Statuses != nil {
				t.Errorf("filter %+v, want limit 25, offset 0, no statuses", f)
			}
			return nil, 0, nil
		}}, nil)
		expectJSON(t, call(s, "GET", "/api/executions", "viewer-1", ""), 200,
			`{"success":true,"data":{"executions":[],"total":0,"limit":25,"offset":0}}`)
	})

	t.Run("ServiceErrors", func(t *testing.T) {
		err := error(domain.BadRequest("Validation error", `unknown status "DONE"`))
		s := newHandlerServer(nil, stubExecutions{list: func(*identity.Principal, store.ExecutionFilter) ([]domain.Execution, int, error) {
			return nil, 0, err
		}}, nil)
		expectJSON(t, call(s, "GET", "/api/executions?status=done", "viewer-1", ""), 400,
			`{"success":false,"error":"Validation error","message":"unknown status \"DONE\""}`)
		// Anything but a domain error is a 500 with the operation's text; the cause is only logged.
		err = errors.New("connection refused")
		expectJSON(t, call(s, "GET", "/api/executions", "viewer-1", ""), 500,
			`{"success":false,"error":"Failed to list executions","message":"An internal error occurred; it has been logged"}`)
	})
}

func TestGetExecutionHandler(t *testing.T) {
	s := newHandlerServer(nil, stubExecutions{get: func(p *identity.Principal, taskID string) (*domain.Execution, error) {
		if p.OrgID != testOrg {
			t.Errorf("principal %+v", p)
		}
		if taskID != "nightly-42" {
			return nil, domain.NotFound("Execution not found", "No such execution in your organization")
		}
		e := finishedRun()
		return &e, nil
	}}, nil)
	expectJSON(t, call(s, "GET", "/api/executions/nightly-42", "viewer-1", ""), 200, `{"success":true,"execution":`+finishedView+`}`)
	expectJSON(t, call(s, "GET", "/api/executions/nightly-43", "viewer-1", ""), 404,
		`{"success":false,"error":"Execution not found","message":"No such execution in your organization"}`)
}

func TestQueueExecutionHandler(t *testing.T) {
	var got []executions.QueueInput
	s := newHandlerServer(nil, stubExecutions{queue: func(p *identity.Principal, in executions.QueueInput) (*domain.Execution, error) {
		got = append(got, in)
		return &domain.Execution{ID: "0123456789abcdef01234569", OrganizationID: p.OrgID, TaskID: in.TaskID, Image: in.Image,
			TimeoutSeconds: in.TimeoutSeconds, EnvNames: []string{"TOKEN"}, TriggeredBy: p.UserID, Status: domain.ExecPending,
			QueueReason: "waiting for a runner", QueuedAt: testNow}, nil
	}}, nil)

	// A field the route does not take is named, at any depth of the body, and nothing is queued.
	expectJSON(t, call(s, "POST", "/api/executions", "dev-1", `{"image":"suite","imagee":"suite:2"}`), 400,
		`{"success":false,"error":"Invalid request","message":"Unknown field \"imagee\""}`)
	expectJSON(t, call(s, "POST", "/api/executions", "dev-1", `{"Image":"suite"}`), 400,
		`{"success":false,"error":"Invalid request","message":"Unknown field \"Image\""}`)
	expectJSON(t, call(s, "POST", "/api/executions", "dev-1", `{"timeoutSeconds":"600"}`), 400,
		`{"success":false,"error":"Validation error","message":"Field \"timeoutSeconds\" must be of type number"}`)
	if len(got) != 0 {
		t.Fatalf("refused bodies reached the service: %+v", got)
	}

	rec := call(s, "POST", "/api/execution-request", "dev-1",
		`{"image":"suite","taskId":"nightly-43","envVars":{"TOKEN":"s3cret"},"timeoutSeconds":600}`)
	expectJSON(t, rec, 201, `{"success":true,"taskId":"nightly-43","status":"PENDING","execution":{"taskId":"nightly-43",
		"organizationId":"64b7f0c2a1e4d5f6a7b8c9d0","projectId":null,"image":"suite","command":"","environment":"",
		"baseUrl":"","folder":"all","timeoutSeconds":600,"envVarNames":["TOKEN"],"status":"PENDING",
		"queueReason":"waiting for a runner","error":null,"exitCode":null,"queuedAt":"2026-05-04T10:00:00.000Z",
		"startedAt":null,"finishedAt":null,"durationMs":0,"triggeredBy":"dev-1","viaApiKey":false,"labels":{},"cancelRequested":false,
		"runner":"","summary":{"total":0,"passed":0,"failed":0,"skipped":0,"flaky":0},"reportFolders":[],"reportBytes":0,"notes":[],
		"htmlReportUrl":null,"allureReportUrl":null,"artifacts":[],"gate":null,"pinned":false,"filesExpiredAt":null,"quarantinedFailures":[],"testsRecorded":false,"shardTotal":0,"retries":0,"tests":[],"testsNotKept":0,"testsOmitted":0,"analysis":null,"shards":[],
		"trackerAIssues":[],"trackerBItems":[],"jiraIssues":[],"tickets":[]}}`)
	want := executions.QueueInput{Image: "suite", TaskID: "nightly-43", EnvVars: map[string]string{"TOKEN": "s3cret"}, TimeoutSeconds: 600}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("queued %+v, want %+v", got, want)
	}
}

// An admin-only route holds no role: the service refuses, after the rate limit was counted.
func TestAdminOnlyRouteRefusedByTheService(t *testing.T) {
	s := newHandlerServer(stubIdentity{changeRole: func(p *identity.Principal, id string, role domain.Role) (*domain.User, error) {
		if err := adminOnly(p); err != nil {
			return nil, err
		}
		return &domain.User{ID: id, Email: id + "@example.com", Role: role}, nil
	}}, nil, nil)
	rec := call(s, "PATCH", "/api/users/viewer-1/role", "dev-1", `{"role":"developer"}`)
	expectJSON(t, rec, 403, `{"success":false,"error":"Forbidden","message":"This action needs the admin role"}`)
	if got := rec.Header().Get("X-RateLimit-Remaining"); got != "9" {
		t.Errorf("X-RateLimit-Remaining %q after the refusal, want 9 (strict: 10 a minute, one taken)", got)
	}
	expectJSON(t, call(s, "PATCH", "/api/users/viewer-1/role", "admin-1", `{"role":"developer"}`), 200,
		`{"success":true,"message":"Role updated","user":{"id":"viewer-1","email":"viewer-1@example.com","role":"developer"}}`)
}

func TestBillingHandlers(t *testing.T) {
	var checkouts []string
	s := newHandlerServer(nil, nil, stubBilling{
		startCheckout: func(p *identity.Principal, priceID, planID string) (*billing.Checkout, error) {
			if err := adminOnly(p); err != nil {
				return nil, err
			}
			checkouts = append(checkouts, p.User.Email+" "+priceID+"|"+planID)
			return &billing.Checkout{URL: "https://pay.example/cs_1", SessionID: "cs_1"}, nil
		},
		events: func(*identity.Principal, int) ([]store.BillingEvent, error) {
			t.Error("the service was called with an invalid limit")
			return nil, nil
		},
	})
	expectJSON(t, call(s, "POST", "/api/billing/checkout", "dev-1", `{"planId":"team"}`), 403,
		`{"success":false,"error":"Forbidden","message":"This action needs the admin role"}`)
	expectJSON(t, call(s, "POST", "/api/billing/checkout", "admin-1", `{"plan":"team"}`), 400,
		`{"success":false,"error":"Invalid request","message":"Unknown field \"plan\""}`)
	expectJSON(t, call(s, "POST", "/api/billing/checkout", "admin-1", `{"planId":"team"}`), 200,
		`{"success":true,"checkoutUrl":"https://pay.example/cs_1","sessionId":"cs_1"}`)
	if want := []string{"admin-1@example.com |team"}; !reflect.DeepEqual(checkouts, want) {
		t.Errorf("checkouts %q, want %q", checkouts, want)
	}
	expectJSON(t, call(s, "GET", "/api/billing/events?limit=all", "admin-1", ""), 400,
		`{"success":false,"error":"Validation error","message":"limit must be a whole number"}`)
}
