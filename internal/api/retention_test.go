package api

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

type retentionIdentity struct {
	stubIdentity
	got *[]identity.RetentionPatch
}

func (s retentionIdentity) UpdateRetention(_ context.Context, p *identity.Principal, patch identity.RetentionPatch) (*identity.RetentionSettings, error) {
	*s.got = append(*s.got, patch)
	return &identity.RetentionSettings{Plan: domain.PlanTeam, Effective: domain.Retention{LogsDays: 30, RunsDays: 400},
		Setting: domain.RetentionSetting{LogsDays: patch.LogsDays.Days}, Defaults: domain.RetentionFor(domain.PlanTeam)}, nil
}

// The retention PATCH body: a field left out is not set, null resets it, a number of days is a
// whole number; anything else is refused before the service, naming the field.
func TestPatchRetentionBody(t *testing.T) {
	var got []identity.RetentionPatch
	// A server per request: the route's strict rate limit is not what this test is about.
	patch := func(body string) *httptest.ResponseRecorder {
		return call(newHandlerServer(retentionIdentity{got: &got}, nil, nil), "PATCH", "/api/organization/retention", "admin-1", body)
	}
	for body, msg := range map[string]string{
		`{}`:                  `"error":"Missing required fields"`,
		`{"logsDays":1.5}`:    `"message":"logsDays must be a whole number of days, or null for the plan's value"`,
		`{"runsDays":"30"}`:   `"message":"runsDays must be a whole number of days, or null for the plan's value"`,
		`{"runsDays":1e2}`:    `"message":"runsDays must be a whole number of days, or null for the plan's value"`,
		`{"logsDays":true}`:   `"message":"logsDays must be a whole number of days, or null for the plan's value"`,
		`{"logDays":3}`:       `"message":"Unknown field \"logDays\""`,
		`{"logsDays":[3]}`:    `"message":"logsDays must be a whole number of days, or null for the plan's value"`,
		`[{"logsDays":3}]`:    `"success":false`,
		`{"logsDays":3} {}`:   `"error":"Invalid JSON"`,
		`{"logsDays":9e9999}`: `"success":false`,
	} {
		rec := patch(body)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), msg) {
			t.Errorf("%s: %d %s, want 400 with %s", body, rec.Code, rec.Body, msg)
		}
	}
	if len(got) != 0 {
		t.Fatalf("refused bodies reached the service: %+v", got)
	}
	rec := patch(`{"logsDays":30,"runsDays":null}`)
	expectJSON(t, rec, 200, `{"success":true,"message":"Retention updated","data":{"logsDays":30,"runsDays":400,"plan":"team",
		"setting":{"logsDays":30,"runsDays":null},"defaults":{"logsDays":90,"runsDays":400},"max":{"logsDays":null,"runsDays":null}}}`)
	patch(`{"runsDays":-2}`)
	if len(got) != 2 || !got[0].LogsDays.Set || *got[0].LogsDays.Days != 30 || !got[0].RunsDays.Set || got[0].RunsDays.Days != nil ||
		got[1].LogsDays.Set || !got[1].RunsDays.Set || *got[1].RunsDays.Days != -2 {
		t.Fatalf("patches %+v", got)
	}
}

// A finished run's list item shows it pinned, unpinned and expired as soon as the service says
// so, however often it was listed before: the encoded items kept for finished runs are kept
// per version of the run.
func TestListedRunChangesWithItsVersion(t *testing.T) {
	run := finishedRun()
	s := newHandlerServer(nil, stubExecutions{list: func(*identity.Principal, store.ExecutionFilter) ([]domain.Execution, int, error) {
		return []domain.Execution{run}, 1, nil
	}}, nil)
	item := func() string {
		t.Helper()
		rec := call(s, "GET", "/api/executions", "viewer-1", "")
		if rec.Code != 200 {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	for range 2 {
		if b := item(); !strings.Contains(b, `"pinned":false,"filesExpiredAt":null`) {
			t.Fatalf("before: %s", b)
		}
	}
	run.Pinned = true
	if b := item(); !strings.Contains(b, `"pinned":true,"filesExpiredAt":null`) {
		t.Fatalf("pinned: %s", b)
	}
	run.Pinned = false
	expired := testNow.Add(-time.Hour)
	run.FilesExpiredAt, run.ReportBytes = &expired, 0
	b := item()
	if !strings.Contains(b, `"pinned":false,"filesExpiredAt":"2026-05-04T09:00:00.000Z"`) || strings.Contains(b, "/reports/") ||
		!strings.Contains(b, `"htmlReportUrl":null`) {
		t.Fatalf("expired: %s", b)
	}
}
