//go:build integration

package app_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/report"
	"verdict/internal/testenv"
)

// TestMetricsCountShardsQueueWait: each container of a sharded run waits for a run slot like a
// run does, and verdict_run_queue_seconds counts each one's wait (a free plan's shards run in
// turn, so the second shard's wait is the first one's run); the run itself finishes once.
func TestMetricsCountShardsQueueWait(t *testing.T) {
	testenv.DockerHost(t)
	const token = "metrics-token-0123456789"
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"VERDICT_METRICS_TOKEN": token, "VERDICT_RUNNER_SLOTS": "4"}})
	admin := h.signup("shard-metrics@example.com", "Shard Metrics Co")
	before, _ := h.scrape(token)
	task := h.queue(bearer(admin.token), map[string]any{"image": shardedImage, "shards": 2})
	r := h.waitFor(bearer(admin.token), task, 120*time.Second, final)
	if got := r.str("execution", "status"); got != "PASSED" {
		t.Fatalf("the sharded run ended %s: %s", got, r.raw)
	}
	h.do("GET", "/api/executions/"+task, bearer(admin.token), nil)
	after, _ := h.scrape(token)
	moved(t, before, after, "verdict_run_queue_seconds_count", 2)
	moved(t, before, after, `verdict_runs_finished_total{status="PASSED"}`, 1)
}

// TestShardReportLinks: a sharded run's container's reports open through a signed link of
// their own (?shard=N on report-token), without a bearer header; another organization's
// member gets 404 for it.
func TestShardReportLinks(t *testing.T) {
	h := shardHarness(t, "sqlite", "team")
	admin := h.signup("shard-links@example.com", "Shard Links Co")
	task := h.queue(bearer(admin.token), map[string]any{"image": shardedImage, "shards": 2})
	h.waitFor(bearer(admin.token), task, 120*time.Second, final)
	r := h.do("GET", "/api/executions/"+task+"/report-token?shard=2", bearer(admin.token), nil)
	expect(t, r, 200, "")
	link := r.str("url")
	if !strings.Contains(link, "/"+task+"~s2/") {
		t.Fatalf("shard 2's link %q is not under its own task", link)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	page := h.do("GET", u.RequestURI(), anon, nil)
	if loc := page.header.Get("Location"); page.status/100 == 3 && loc != "" {
		page = h.do("GET", loc, anon, nil) // the token swapped for the report link
	}
	if page.status != 200 || !strings.Contains(page.raw, "<") {
		t.Fatalf("opening shard 2's link without a bearer: %d %.200s", page.status, page.raw)
	}
	expect(t, h.do("GET", "/api/executions/"+task+"/report-token?shard=3", bearer(admin.token), nil), 404, "Shard not found")
	expect(t, h.do("GET", "/api/executions/"+task+"/report-token?shard=x", bearer(admin.token), nil), 400, "Validation error")
	other := h.signup("other-shards@example.com", "Other Co")
	expect(t, h.do("GET", "/api/executions/"+task+"/report-token?shard=1", bearer(other.token), nil), 404, "")
}

// TestShardedRunJUnitDownload: a sharded run's merged tests download as one JUnit XML file
// that Verdict's own parser reads back whole; another organization's member gets 404.
func TestShardedRunJUnitDownload(t *testing.T) {
	h := shardHarness(t, "sqlite", "team")
	admin := h.signup("shard-junit@example.com", "Shard JUnit Co")
	task := h.queue(bearer(admin.token), map[string]any{"image": shardedImage, "shards": 2})
	r := h.waitFor(bearer(admin.token), task, 120*time.Second, final)
	total := r.get("execution", "summary", "total").(float64)
	x := h.do("GET", "/api/executions/"+task+"/junit", bearer(admin.token), nil)
	if x.status != 200 || !strings.HasPrefix(x.header.Get("Content-Type"), "application/xml") ||
		!strings.Contains(x.header.Get("Content-Disposition"), task+"-junit.xml") {
		t.Fatalf("GET junit: %d %v %.300s", x.status, x.header, x.raw)
	}
	tests, err := report.ParseJUnit([]byte(x.raw))
	if err != nil || float64(len(tests)) != total || total == 0 {
		t.Fatalf("the merged JUnit file holds %d tests (%v), the run %v", len(tests), err, total)
	}
	other := h.signup("other-junit@example.com", "Other JUnit Co")
	expect(t, h.do("GET", "/api/executions/"+task+"/junit", bearer(other.token), nil), 404, "")
}
