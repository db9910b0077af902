package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
)

// A test's attachments are shown as report URLs on the reports' origin, in the reports of the
// container that ran the test (a shard's own), and not at all once the report files are gone;
// an event keeps them on the tests it carries.
func TestViewAttachments(t *testing.T) {
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	trace := domain.Attachment{Name: "trace", ContentType: "application/zip", Path: "test-results/a b/trace.zip", Retry: 1}
	e := &domain.Execution{ID: "0123456789abcdef01234567", OrganizationID: "bf58099a92546f27cb8bd8ba", TaskID: "nightly-42",
		Status: domain.ExecFailed, Tests: []domain.TestResult{
			{Name: "a", Status: domain.TestFailed, Attachments: []domain.Attachment{trace}},
			{Name: "b", Status: domain.TestFailed, Shard: 2, Attachments: []domain.Attachment{trace}},
			{Name: "c", Status: domain.TestPassed},
		}}
	v := NewViews("https://verdict.example.com", "https://reports.example.com/")
	decode := func(x Execution) []map[string]any {
		t.Helper()
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Tests []map[string]any }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out.Tests
	}
	for _, x := range []Execution{v.Execution(e, now), v.ExecutionEvent(e, now)} {
		tests := decode(x)
		if len(tests) != 3 {
			t.Fatalf("tests: %v", tests)
		}
		want := []string{
			`[map[contentType:application/zip name:trace retry:1 url:https://reports.example.com/reports/bf58099a92546f27cb8bd8ba/nightly-42/test-results/a%20b/trace.zip]]`,
			`[map[contentType:application/zip name:trace retry:1 url:https://reports.example.com/reports/bf58099a92546f27cb8bd8ba/nightly-42~s2/test-results/a%20b/trace.zip]]`,
		}
		for i, w := range want {
			if got := fmt.Sprint(tests[i]["attachments"]); got != w {
				t.Fatalf("test %d's attachments %s, want %s", i, got, w)
			}
			if _, ok := tests[i]["path"]; ok {
				t.Fatalf("test %d shows a path: %v", i, tests[i])
			}
		}
		if _, ok := tests[2]["attachments"]; ok {
			t.Fatalf("a test without attachments: %v", tests[2])
		}
	}
	gone := *e
	gone.FilesExpiredAt = &now
	for _, tc := range decode(v.Execution(&gone, now)) {
		if _, ok := tc["attachments"]; ok {
			t.Fatalf("attachments after retention: %v", tc)
		}
	}
	if e.Tests[0].Attachments[0].Path != "test-results/a b/trace.zip" || !strings.HasSuffix(e.Tests[1].Attachments[0].Path, "trace.zip") {
		t.Fatal("the view changed the run's tests")
	}
}
