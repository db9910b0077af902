package api

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/ports"
	"verdict/internal/ratelimit"
	"verdict/internal/store"
	"verdict/internal/testcases"
)

type stubTestCases struct {
	ports.TestCases
	list   func(p *identity.Principal, f store.TestCaseFilter) ([]domain.TestCase, int, error)
	create func(p *identity.Principal, in testcases.Input) (*domain.TestCase, error)
	imp    func(p *identity.Principal, projectID string, file []byte) (*testcases.ImportResult, error)
}

func (s stubTestCases) List(_ context.Context, p *identity.Principal, f store.TestCaseFilter) ([]domain.TestCase, int, error) {
	return s.list(p, f)
}

func (s stubTestCases) Create(_ context.Context, p *identity.Principal, in testcases.Input) (*domain.TestCase, error) {
	return s.create(p, in)
}

func (s stubTestCases) Import(_ context.Context, p *identity.Principal, projectID string, file []byte) (*testcases.ImportResult, error) {
	return s.imp(p, projectID, file)
}

func newTestCaseServer(tc ports.TestCases) *Server {
	return New(Deps{Identity: stubIdentity{}, TestCases: tc, JWT: testTokens{}, Limiter: ratelimit.NewMemoryLimiter(domain.SystemClock),
		Log: slog.New(slog.DiscardHandler), Clock: func() time.Time { return testNow }})
}

// sendCSV posts a body with a content type as the member token.
func sendCSV(s *Server, path, token, contentType, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", path, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	return rec
}

// The import route takes a CSV body of up to 10 MiB, refuses another content type or a larger
// body itself (for every role, before the service), and shows the service's result.
func TestImportTestCasesBody(t *testing.T) {
	var gotProject string
	var gotFile []byte
	s := newTestCaseServer(stubTestCases{imp: func(p *identity.Principal, projectID string, file []byte) (*testcases.ImportResult, error) {
		gotProject, gotFile = projectID, file
		return &testcases.ImportResult{Imported: 2, Updated: 1, Skipped: []testcases.Skip{{Line: 4, Reason: "title is required"}}}, nil
	}})
	const path = "/api/test-cases/import?projectId=3c9d7f0e5b2a41d8a6e1f402"
	for _, ct := range []string{"application/json", "text/plain", "multipart/form-data; boundary=x", "text/csv; charset"} {
		expectJSON(t, sendCSV(s, path, "viewer-1", ct, "Title\nx\n"), 400,
			`{"success":false,"error":"Invalid content type","message":"Send the file as text/csv"}`)
	}
	expectJSON(t, sendCSV(s, path, "viewer-1", "text/csv; charset=windows-1252", "Title\nx\n"), 400,
		`{"success":false,"error":"Invalid content type","message":"Send the CSV file in UTF-8 (charset=utf-8)"}`)
	big := "Title\n" + strings.Repeat("x", testcases.MaxImportBytes)
	expectJSON(t, sendCSV(s, path, "viewer-1", "text/csv", big), 400,
		`{"success":false,"error":"Request body too large","message":"The file must be at most 10485760 bytes"}`)
	// The same without a Content-Length (a chunked upload): the read stops at the bound.
	r := httptest.NewRequest("POST", path, strings.NewReader(big))
	r.ContentLength = -1
	r.Header.Set("Authorization", "Bearer dev-1")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	expectJSON(t, rec, 400, `{"success":false,"error":"Request body too large","message":"The file must be at most 10485760 bytes"}`)
	if gotFile != nil {
		t.Fatal("the service was called with a body the route refuses")
	}

	file := "Title\n" + strings.Repeat("y", testcases.MaxImportBytes-len("Title\n"))
	for _, ct := range []string{"text/csv", "text/csv; charset=UTF-8", "application/csv", ""} {
		gotFile = nil
		expectJSON(t, sendCSV(s, path, "dev-1", ct, file), 200,
			`{"success":true,"data":{"imported":2,"updated":1,"skipped":[{"line":4,"reason":"title is required"}]}}`)
		if gotProject != "3c9d7f0e5b2a41d8a6e1f402" || string(gotFile) != file {
			t.Fatalf("with %q the service got project %q and %d bytes, want the whole file of %d", ct, gotProject, len(gotFile), len(file))
		}
	}
}

func TestTestCaseBodiesAndViews(t *testing.T) {
	at := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	stored := domain.TestCase{ID: "5d1e8a3b9c0f4e2d7a6b1c09", OrganizationID: testOrg, ProjectID: "3c9d7f0e5b2a41d8a6e1f402",
		Title: "Pay", CreatedBy: "dev-1", CreatedAt: at, UpdatedAt: at}
	const view = `{"id":"5d1e8a3b9c0f4e2d7a6b1c09","projectId":"3c9d7f0e5b2a41d8a6e1f402","title":"Pay","suite":"","tags":[],
		"priority":null,"preconditions":"","steps":[],"createdBy":"dev-1","createdAt":"2026-05-04T09:00:00.000Z",
		"updatedAt":"2026-05-04T09:00:00.000Z"}`
	var gotFilter store.TestCaseFilter
	var gotInput testcases.Input
	s := newTestCaseServer(stubTestCases{
		list: func(p *identity.Principal, f store.TestCaseFilter) ([]domain.TestCase, int, error) {
			gotFilter = f
			return []domain.TestCase{stored}, 7, nil
		},
		create: func(p *identity.Principal, in testcases.Input) (*domain.TestCase, error) {
			gotInput = in
			return &stored, nil
		},
	})

	expectJSON(t, call(s, "GET", "/api/test-cases?projectId=p1&suite=Checkout&tag=smoke", "viewer-1", ""), 200,
		`{"success":true,"data":{"testCases":[`+view+`],"total":7}}`)
	if want := (store.TestCaseFilter{ProjectID: "p1", Suite: "Checkout", Tag: "smoke", Limit: 50}); gotFilter != want {
		t.Fatalf("filter %+v, want %+v", gotFilter, want)
	}
	for _, q := range []string{"limit=0", "limit=201", "limit=x"} {
		expectJSON(t, call(s, "GET", "/api/test-cases?projectId=p1&"+q, "viewer-1", ""), 400,
			`{"success":false,"error":"Validation error","message":"limit must be an integer from 1 to 200"}`)
	}

	expectJSON(t, call(s, "POST", "/api/test-cases", "dev-1",
		`{"projectId":"p1","title":"Pay","tags":["a"],"priority":"high","steps":[{"action":"Open","expected":"Shown"}]}`),
		201, `{"success":true,"testCase":`+view+`}`)
	if gotInput.ProjectID != "p1" || *gotInput.Title != "Pay" || (*gotInput.Tags)[0] != "a" || *gotInput.Priority != "high" ||
		(*gotInput.Steps)[0] != (domain.TestStep{Action: "Open", Expected: "Shown"}) || gotInput.Suite != nil {
		t.Fatalf("input %+v", gotInput)
	}
	for body, field := range map[string]string{
		`{"projectId":"p1","title":"t","step":[]}`:                          "step",
		`{"projectId":"p1","title":"t","steps":[{"expectedResult":"x"}]}`:   "steps[0].expectedResult",
		`{"projectId":"p1","Title":"t"}`:                                    "Title",
		`{"title":"t","priority":"high","testCase":{"title":"nested"}}`:     "testCase",
		`{"projectId":"p1","title":"t","steps":[{"action":"a","id":"s1"}]}`: "steps[0].id",
	} {
		expectJSON(t, call(s, "POST", "/api/test-cases", "dev-1", body), 400,
			`{"success":false,"error":"Invalid request","message":"Unknown field \"`+field+`\""}`)
	}
	// The project of a test case does not change.
	expectJSON(t, call(s, "PATCH", "/api/test-cases/5d1e8a3b9c0f4e2d7a6b1c09", "dev-1", `{"projectId":"p2"}`), 400,
		`{"success":false,"error":"Invalid request","message":"Unknown field \"projectId\""}`)
}
