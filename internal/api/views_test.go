package api

import (
	"bytes"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"verdict/internal/domain"
)

// The typed views must say what the map-built views they replaced said: the same keys and
// values, null and [] where those had them. The legacy builders below are those maps, kept as
// the reference; outputs are compared after decoding (key order is all that may differ).

func legacyTsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func legacyNullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func legacyExecution(e *domain.Execution, now time.Time) obj {
	tests := e.Tests
	if tests == nil {
		tests = []domain.TestResult{}
	}
	folder := e.Folder
	if folder == "" {
		folder = "all"
	}
	v := obj{
		"taskId": e.TaskID, "organizationId": e.OrganizationID, "projectId": legacyNullable(e.ProjectID),
		"image": e.Image, "command": e.Command, "environment": e.Environment, "baseUrl": e.BaseURL,
		"folder": folder, "timeoutSeconds": e.TimeoutSeconds, "envVarNames": nonNil(e.EnvNames),
		"status": e.Status, "queueReason": legacyNullable(e.QueueReason), "error": legacyNullable(e.Error), "exitCode": e.ExitCode,
		"queuedAt": ts(e.QueuedAt), "startedAt": legacyTsPtr(e.StartedAt), "finishedAt": legacyTsPtr(e.FinishedAt),
		"durationMs": e.DurationMs(now), "triggeredBy": e.TriggeredBy, "viaApiKey": e.ViaAPIKey, "labels": map[string]string{},
		"cancelRequested": e.CancelRequested, "runner": e.RunnerID, "summary": e.Summary, "tests": tests, "analysis": e.Analysis,
		"reportFolders": nonNil(e.ReportDirs), "reportBytes": e.ReportBytes, "notes": nonNil(e.Notes),
		"trackerAIssues": []any{}, "trackerBItems": []any{}, "jiraIssues": []any{}, "tickets": []any{},
		"quarantinedFailures": []any{}, "testsRecorded": e.TestsRecorded,
		"testsNotKept": max(e.Summary.Total-len(tests), 0), "testsOmitted": 0,
		"pinned": e.Pinned, "filesExpiredAt": legacyTsPtr(e.FilesExpiredAt),
		"shardTotal": e.Shards, "retries": e.Retries, "shards": []any{},
	}
	v["gate"] = nil // these runs' projects have no gate rules
	base := "/reports/" + e.OrganizationID + "/" + url.PathEscape(e.TaskID) + "/"
	var html, allure any
	artifacts := []string{}
	for _, d := range e.ReportDirs {
		switch d {
		case "playwright-report", "reports", "html-report":
			if html == nil {
				html = base + d + "/"
			}
		case "allure-report":
			allure = base + d + "/"
		}
		artifacts = append(artifacts, base+d+"/")
	}
	v["htmlReportUrl"], v["allureReportUrl"], v["artifacts"] = html, allure, artifacts
	return v
}

func legacyUser(u *domain.User) obj {
	return obj{"id": u.ID, "email": u.Email, "name": u.Name, "role": u.Role, "status": u.Status,
		"lastLoginAt": legacyTsPtr(u.LastLoginAt), "createdAt": ts(u.CreatedAt)}
}

func legacyOrg(o *domain.Organization, userCount int) obj {
	l := o.Limits()
	return obj{"id": o.ID, "name": o.Name, "slug": o.Slug, "plan": o.Plan, "limits": obj{"maxProjects": l.MaxProjects,
		"maxTestRuns": l.MaxTestRuns, "maxUsers": l.MaxUsers, "maxConcurrentRuns": l.MaxConcurrentRuns,
		"maxStorageBytes": l.MaxStorageBytes, "currentStorageUsedBytes": o.StorageUsedBytes},
		"userCount": userCount, "userLimit": l.MaxUsers, "aiAnalysisEnabled": o.AIAnalysisEnabled,
		"features": o.Features, "allowedImages": nonNil(o.AllowedImages), "createdAt": ts(o.CreatedAt)}
}

func legacyInvitation(i *domain.Invitation, now time.Time) obj {
	return obj{"id": i.ID, "email": i.Email, "role": i.Role, "status": i.EffectiveStatus(now),
		"invitedBy": i.InvitedBy, "invitedByName": i.InvitedByName, "expiresAt": ts(i.ExpiresAt), "createdAt": ts(i.CreatedAt)}
}

func legacyAPIKey(k *domain.APIKey) obj {
	return obj{"id": k.ID, "name": k.Name, "prefix": k.Prefix, "createdAt": ts(k.CreatedAt), "lastUsedAt": legacyTsPtr(k.LastUsedAt)}
}

func legacyProject(p *domain.Project) obj {
	urls := p.TargetURLs
	if urls == nil {
		urls = map[string]string{}
	}
	vars := projectView(p).EnvVars
	return obj{"id": p.ID, "name": p.Name, "image": p.Image, "targetUrls": urls, "defaultFolder": p.DefaultFolder,
		"timeoutSeconds": p.TimeoutSeconds, "reportFolders": nonNil(p.ReportFolders), "envVars": vars,
		"repository": p.Repository, "createdAt": ts(p.CreatedAt), "updatedAt": ts(p.UpdatedAt),
		"shards": max(p.Shards, 1), "retries": p.Retries}
}

// sameJSON fails unless a and b encode to the same JSON value.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	norm := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var x any
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(x) // maps encode with sorted keys
		return b
	}
	if g, w := norm(got), norm(want); !bytes.Equal(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func TestViewsMatchTheirJSON(t *testing.T) {
	now := time.Date(2025, 6, 1, 11, 2, 3, 456e6, time.UTC)
	later := now.Add(90 * time.Second)
	exit := 1
	runs := map[string]*domain.Execution{
		"pending": {TaskID: "run-1", OrganizationID: "bf58099a92546f27cb8bd8ba", Image: "img", Status: domain.ExecPending, QueuedAt: now},
		"finished": {TaskID: "nightly_2", OrganizationID: "bf58099a92546f27cb8bd8ba", ProjectID: "p1", Image: "img:1",
			Command: "npx playwright test", Environment: "staging", BaseURL: "https://s.example.com", Folder: "e2e/<a&b>",
			TimeoutSeconds: 600, EnvNames: []string{"TOKEN"}, TriggeredBy: "u1", ViaAPIKey: true, Status: domain.ExecFailed,
			QueueReason: "", Error: "1 test failed", ExitCode: &exit, QueuedAt: now, StartedAt: &now, FinishedAt: &later,
			RunnerID: "remote:ci-1", CancelRequested: true, Summary: domain.Summary{Total: 2, Passed: 1, Failed: 1},
			Tests:      []domain.TestResult{{Name: "a", Status: domain.TestPassed}, {Name: "b", Status: domain.TestFailed, Error: "boom"}},
			ReportDirs: []string{"junit", "playwright-report", "reports", "allure-report"}, ReportBytes: 1 << 20,
			Notes: []string{"note"}},
	}
	for name, e := range runs {
		e.ReportIndexes = e.ReportDirs // every folder opens: the legacy view linked them all
		want := legacyExecution(e, later)
		sameJSON(t, name+" execution", Views{}.Execution(e, later), want)
		delete(want, "tests")
		delete(want, "analysis")
		delete(want, "trackerAIssues")
		delete(want, "trackerBItems")
		delete(want, "jiraIssues")
		delete(want, "tickets")
		delete(want, "testsNotKept")
		delete(want, "testsOmitted")
		delete(want, "shards")
		sameJSON(t, name+" list item", Views{}.ExecutionListItem(e, later), want)
	}

	u := &domain.User{ID: "u1", Email: "a@example.com", Name: "A <b>", Role: domain.RoleAdmin, Status: domain.UserActive, CreatedAt: now}
	sameJSON(t, "user", userView(u), legacyUser(u))
	u.LastLoginAt = &later
	sameJSON(t, "user after login", userView(u), legacyUser(u))

	o := &domain.Organization{ID: "o1", Name: "Acme", Slug: "acme", Plan: domain.PlanTeam, StorageUsedBytes: 42, CreatedAt: now}
	sameJSON(t, "organization", orgView(o, 3), legacyOrg(o, 3))
	o.AllowedImages = []string{"ghcr.io/acme/*"}
	o.Features.AIFeatures.AutomationPlanner = true
	sameJSON(t, "organization with images", orgView(o, 3), legacyOrg(o, 3))

	me := Me{User: userView(u), Organization: orgView(o, 3)}
	me.CreatedAt, me.Organization.CreatedAt = "", ""
	wantMe, wantOrg := legacyUser(u), legacyOrg(o, 3)
	delete(wantMe, "createdAt")
	delete(wantOrg, "createdAt")
	wantMe["organization"] = wantOrg
	sameJSON(t, "me", me, wantMe)

	inv := &domain.Invitation{ID: "i1", Email: "b@example.com", Role: domain.RoleViewer, Status: domain.InvitationPending,
		InvitedBy: "u1", InvitedByName: "A", ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	sameJSON(t, "invitation", invitationView(inv, now), legacyInvitation(inv, now))
	sameJSON(t, "expired invitation", invitationView(inv, now.Add(2*time.Hour)), legacyInvitation(inv, now.Add(2*time.Hour)))

	k := &domain.APIKey{ID: "k1", Name: "ci", Prefix: "pk_live_ab", CreatedAt: now}
	sameJSON(t, "api key", apiKeyView(k), legacyAPIKey(k))
	k.LastUsedAt = &later
	sameJSON(t, "used api key", apiKeyView(k), legacyAPIKey(k))
	created := legacyAPIKey(k)
	delete(created, "lastUsedAt")
	sameJSON(t, "created api key", apiKeyView(k).NewAPIKey, created)

	p := &domain.Project{ID: "p1", Name: "Web", Image: "img", CreatedAt: now, UpdatedAt: later,
		EnvVars: []domain.EnvVar{{Key: "A", Value: "x"}, {Key: "S", Value: "sealed", Secret: true}}}
	sameJSON(t, "project", projectView(p), legacyProject(p))
	p.TargetURLs, p.ReportFolders = map[string]string{"staging": "https://s"}, []string{"junit"}
	sameJSON(t, "project with urls", projectView(p), legacyProject(p))
}

// Report links are absolute, on the reports origin when there is one, and name only folders
// that hold an index.html; a run that recorded none gets none.
func TestExecutionReportLinks(t *testing.T) {
	now := time.Now()
	e := &domain.Execution{TaskID: "t-1", OrganizationID: "o1", Status: domain.ExecPassed, QueuedAt: now,
		ReportDirs: []string{"junit", "test-results", "playwright-report", "allure-report"}}
	for _, c := range []struct {
		name         string
		views        Views
		indexes      []string
		html, allure string
		artifacts    []string
	}{
		{"junit only", NewViews("https://verdict.example.com/", ""), []string{}, "", "", []string{}},
		{"not recorded", NewViews("https://verdict.example.com", ""), nil, "", "", []string{}},
		{"public", NewViews("https://verdict.example.com/", ""), []string{"playwright-report", "allure-report"},
			"https://verdict.example.com/reports/o1/t-1/playwright-report/", "https://verdict.example.com/reports/o1/t-1/allure-report/",
			[]string{"https://verdict.example.com/reports/o1/t-1/playwright-report/", "https://verdict.example.com/reports/o1/t-1/allure-report/"}},
		{"reports origin", NewViews("https://verdict.example.com", "https://reports.example.com"), []string{"allure-report"},
			"", "https://reports.example.com/reports/o1/t-1/allure-report/", []string{"https://reports.example.com/reports/o1/t-1/allure-report/"}},
	} {
		e.ReportIndexes = c.indexes
		v := c.views.ExecutionListItem(e, now)
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		if str(v.HTMLReportURL) != c.html || str(v.AllureReportURL) != c.allure || !equalStrings(v.Artifacts, c.artifacts) {
			t.Errorf("%s: html %q allure %q artifacts %q", c.name, str(v.HTMLReportURL), str(v.AllureReportURL), v.Artifacts)
		}
		if len(v.ReportFolders) != len(e.ReportDirs) {
			t.Errorf("%s: reportFolders %q", c.name, v.ReportFolders)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The list answer is written by hand from encoded items; it must be what encoding/json makes of
// the same page.
func TestExecutionPageJSON(t *testing.T) {
	now := time.Date(2025, 6, 1, 11, 2, 3, 0, time.UTC)
	runs := []domain.Execution{
		{TaskID: "a<b>&", OrganizationID: "o1", Status: domain.ExecPassed, QueuedAt: now, Notes: []string{"\u2028 \x00 \xff"}},
		{TaskID: "b", OrganizationID: "o1", Status: domain.ExecRunning, QueuedAt: now, StartedAt: &now},
	}
	for _, n := range []int{0, 1, 2} {
		items := make([]ExecutionListItem, n)
		page := executionPage{Executions: make([][]byte, n), Total: 42, Limit: 25, Offset: 5}
		for i := range n {
			items[i] = NewViews("https://v.example.com", "").ExecutionListItem(&runs[i], now)
			b, err := MarshalView(items[i])
			if err != nil {
				t.Fatal(err)
			}
			page.Executions[i] = b
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want) // as writeJSON encodes
		enc.SetEscapeHTML(false)
		if err := enc.Encode(obj{"success": true, "data": struct {
			Executions []ExecutionListItem `json:"executions"`
			Total      int                 `json:"total"`
			Limit      int                 `json:"limit"`
			Offset     int                 `json:"offset"`
		}{items, 42, 25, 5}}); err != nil {
			t.Fatal(err)
		}
		if got := page.appendJSON(nil); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%d items:\n got %s\nwant %s", n, got, want.Bytes())
		}
	}
}
