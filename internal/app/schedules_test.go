//go:build integration

package app_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/notify/notifytest"
	"verdict/internal/testenv"
)

// TestSchedulesAPI: a project's schedules through the API on both databases: created with
// their next fire times, listed by every role, changed and paused by writers only, a malformed
// cron or zone refused naming it, secrets never shown, and another organization's project or
// schedule a 404.
func TestSchedulesAPI(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("sched@example.com", "Schedule Co")
		viewer := h.join(admin, "viewer@example.com", "viewer")
		dev := h.join(admin, "dev@example.com", "developer")
		project := h.project(admin, "Web")
		base := "/api/projects/" + project + "/schedules"

		// The harness's clock stands at Tuesday 2026-03-10 09:00 UTC.
		r := h.do("POST", base, bearer(dev.token), map[string]any{"name": "Nightly", "cron": "30 2 * * 1-5",
			"timezone": "Europe/Paris", "folder": "tests/e2e", "baseUrl": "https://staging.example.com",
			"envVars": []any{map[string]any{"key": "API_TOKEN", "value": "s3cr3t-schedule-value", "secret": true}},
			"labels":  map[string]any{"suite": "nightly"}, "enabled": true})
		expect(t, r, 201, "")
		id := r.str("data", "schedule", "id")
		runs, _ := r.get("data", "schedule", "nextRuns").([]any)
		want := []any{"2026-03-11T01:30:00.000Z", "2026-03-12T01:30:00.000Z", "2026-03-13T01:30:00.000Z"}
		if !slices.Equal(runs, want) || strings.Contains(r.raw, "s3cr3t-schedule-value") || !strings.Contains(r.raw, "********") {
			t.Fatalf("created: %s", r.raw)
		}
		if r.get("data", "schedule", "lastError") != nil || r.get("data", "schedule", "lastTaskId") != nil ||
			r.str("data", "schedule", "timezone") != "Europe/Paris" || r.str("data", "schedule", "createdBy") != dev.id {
			t.Fatalf("created: %s", r.raw)
		}

		// Every member reads; the list shows the same.
		l := h.do("GET", base, bearer(viewer.token), nil)
		expect(t, l, 200, "")
		list, _ := l.get("data", "schedules").([]any)
		if len(list) != 1 || strings.Contains(l.raw, "s3cr3t-schedule-value") {
			t.Fatalf("list: %s", l.raw)
		}
		expect(t, h.do("GET", base+"/"+id, bearer(viewer.token), nil), 200, "")

		// Malformed cron or zone: 400 naming it.
		for _, c := range []struct {
			body      map[string]any
			err, text string
		}{
			{map[string]any{"name": "Bad", "cron": "every night", "timezone": "UTC"}, "Invalid cron", `cron "every night" must have 5 fields`},
			{map[string]any{"name": "Bad", "cron": "61 * * * *", "timezone": "UTC"}, "Invalid cron", `cron "61 * * * *" is not valid`},
			{map[string]any{"name": "Bad", "cron": "0 2 * * *", "timezone": "Europe/Pariss"}, "Invalid timezone", `timezone "Europe/Pariss" is not an IANA time zone`},
			{map[string]any{"name": "Bad", "cron": "0 2 * * *"}, "Missing required fields", "timezone is required"},
			{map[string]any{"name": "Bad", "cron": "0 2 * * *", "timezone": "UTC", "labels": map[string]any{"schedule": "x"}}, "Validation error", "label schedule is set by the schedule itself"},
			{map[string]any{"name": "Bad", "cron": "0 2 * * *", "timezone": "UTC", "every": "day"}, "Invalid request", `Unknown field "every"`},
		} {
			r := h.do("POST", base, bearer(dev.token), c.body)
			expect(t, r, 400, c.err)
			if !strings.Contains(r.str("message"), c.text) {
				t.Errorf("%v: %s", c.body, r.raw)
			}
		}
		r = h.do("PATCH", base+"/"+id, bearer(admin.token), map[string]any{"timezone": "Mars/Olympus"})
		expect(t, r, 400, "Invalid timezone")

		// Viewers cannot write.
		expect(t, h.do("POST", base, bearer(viewer.token), map[string]any{"name": "V", "cron": "* * * * *", "timezone": "UTC"}), 403, "Forbidden")
		expect(t, h.do("PATCH", base+"/"+id, bearer(viewer.token), map[string]any{"enabled": false}), 403, "Forbidden")
		expect(t, h.do("DELETE", base+"/"+id, bearer(viewer.token), nil), 403, "Forbidden")

		// Pause: no next runs; resume with a new cron: rescheduled from now.
		r = h.do("PATCH", base+"/"+id, bearer(admin.token), map[string]any{"enabled": false})
		expect(t, r, 200, "")
		if runs, _ := r.get("data", "schedule", "nextRuns").([]any); len(runs) != 0 || r.get("data", "schedule", "enabled") != false {
			t.Fatalf("paused: %s", r.raw)
		}
		r = h.do("PATCH", base+"/"+id, bearer(admin.token), map[string]any{"enabled": true, "cron": "*/15 * * * *", "timezone": "UTC"})
		expect(t, r, 200, "")
		if runs, _ := r.get("data", "schedule", "nextRuns").([]any); !slices.Equal(runs, []any{"2026-03-10T09:15:00.000Z", "2026-03-10T09:30:00.000Z", "2026-03-10T09:45:00.000Z"}) {
			t.Fatalf("resumed: %s", r.raw)
		}

		// Another organization: its member sees neither the project nor the schedule.
		other := h.signup("other@example.com", "Other Co")
		otherProject := h.project(other, "Theirs")
		expect(t, h.do("GET", base, bearer(other.token), nil), 404, "Project not found")
		expect(t, h.do("GET", base+"/"+id, bearer(other.token), nil), 404, "Project not found")
		expect(t, h.do("PATCH", base+"/"+id, bearer(other.token), map[string]any{"enabled": false}), 404, "Project not found")
		expect(t, h.do("DELETE", base+"/"+id, bearer(other.token), nil), 404, "Project not found")
		expect(t, h.do("POST", base, bearer(other.token), map[string]any{"name": "X", "cron": "* * * * *", "timezone": "UTC"}), 404, "Project not found")
		expect(t, h.do("GET", "/api/projects/"+otherProject+"/schedules/"+id, bearer(other.token), nil), 404, "Schedule not found")
		expect(t, h.do("GET", base+"/not-an-id", bearer(admin.token), nil), 404, "Schedule not found")

		expect(t, h.do("DELETE", base+"/"+id, bearer(dev.token), nil), 200, "")
		expect(t, h.do("GET", base+"/"+id, bearer(dev.token), nil), 404, "Schedule not found")
	})
}

// TestScheduleFiresOnceOnTwoReplicas: two replicas on one PostgreSQL database, each with its
// runner and its schedules worker polling every 20 ms on a shared clock that runs ten minutes of
// a per-minute schedule in steps of 5 s: each due time queues exactly one run, and the runs run
// the sample suite on the engine. Then the organization's image policy refuses the project's
// image: the next fire is recorded on the schedule with the reason, queues nothing, and reaches
// the project's webhook once as a schedule.refused event.
func TestScheduleFiresOnceOnTwoReplicas(t *testing.T) {
	testenv.DockerHost(t)
	dbURL := testenv.PostgresDB(t)
	clock := testenv.NewClock(time.Date(2026, 6, 1, 9, 59, 50, 0, time.UTC))
	opts := harnessOpts{dialect: "postgres", databaseURL: dbURL, realClock: true, workers: true, lease: 2 * time.Second,
		scheduleClock: clock.Now, scheduleInterval: 20 * time.Millisecond, env: map[string]string{"VERDICT_EGRESS_ALLOW": "127.0.0.1"}}
	a, b := newHarness(t, opts), newHarness(t, opts)
	hook := notifytest.Webhook(t, "", "whsec_schedule_refusals")
	admin := a.signup("replicas@example.com", "Schedule Replicas")
	p := a.do("POST", "/api/projects", bearer(admin.token), map[string]any{"name": "Web", "image": passImage})
	expect(t, p, 201, "")
	project := p.str("project", "id")
	r := b.do("POST", "/api/projects/"+project+"/schedules", bearer(admin.token),
		map[string]any{"name": "Every minute", "cron": "* * * * *", "timezone": "UTC", "labels": map[string]any{"suite": "smoke"}})
	expect(t, r, 201, "")
	id := r.str("data", "schedule", "id")
	expect(t, a.do("POST", "/api/projects/"+project+"/notifications", bearer(admin.token), map[string]any{"kind": "webhook",
		"url": hook.URL, "on": []any{"failure"}, "secret": "whsec_schedule_refusals"}), 201, "")

	for range 10 * 12 { // 10:00:00 to 10:09:50 in steps of 5 s, each seen by both replicas' polls
		clock.Advance(5 * time.Second)
		time.Sleep(50 * time.Millisecond)
	}
	var want []string
	for m := range 10 {
		want = append(want, fmt.Sprintf("sch-%s-%d", id, time.Date(2026, 6, 1, 10, m, 0, 0, time.UTC).Unix()))
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		l := a.do("GET", "/api/executions?limit=100&label=trigger:schedule", bearer(admin.token), nil)
		expect(t, l, 200, "")
		items, _ := l.get("data", "executions").([]any)
		var got []string
		done := 0
		for _, it := range items {
			e := it.(map[string]any)
			got = append(got, e["taskId"].(string))
			if e["status"] == "PASSED" {
				done++
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("runs queued by the schedule over ten minutes on two replicas:\n got  %v\n want %v", got, want)
		}
		if done == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduled runs did not all pass: %s", l.raw)
		}
		time.Sleep(500 * time.Millisecond)
	}
	e := b.do("GET", "/api/executions/"+want[3], bearer(admin.token), nil)
	labels, _ := e.get("execution", "labels").(map[string]any)
	if labels["trigger"] != "schedule" || labels["schedule"] != "Every minute" || labels["suite"] != "smoke" ||
		e.str("execution", "projectId") != project || e.str("execution", "image") != passImage {
		t.Fatalf("a scheduled run: %s", e.raw)
	}
	s := a.do("GET", "/api/projects/"+project+"/schedules/"+id, bearer(admin.token), nil)
	if s.str("data", "schedule", "lastTaskId") != want[9] || s.str("data", "schedule", "lastFireAt") != "2026-06-01T10:09:00.000Z" {
		t.Fatalf("the schedule's record: %s", s.raw)
	}

	// The plan's policy refuses the next fire: recorded with the reason, nothing queued.
	expect(t, a.do("PATCH", "/api/organization", bearer(admin.token), map[string]any{"allowedImages": []any{"registry.example.com/*"}}), 200, "")
	clock.Advance(15 * time.Second) // 10:10:05
	var refused resp
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		refused = b.do("GET", "/api/projects/"+project+"/schedules/"+id, bearer(admin.token), nil)
		if refused.str("data", "schedule", "lastRefusedAt") != "" || time.Now().After(deadline) {
			break
		}
	}
	if refused.str("data", "schedule", "lastError") != `Image not allowed: The image "`+passImage+`" is not allowed by this server's or your organization's image policy` ||
		refused.str("data", "schedule", "lastFireAt") != "2026-06-01T10:10:00.000Z" || refused.str("data", "schedule", "lastTaskId") != want[9] {
		t.Fatalf("the refused fire's record: %s", refused.raw)
	}
	l := a.do("GET", "/api/executions?limit=100&label=trigger:schedule", bearer(admin.token), nil)
	if items, _ := l.get("data", "executions").([]any); len(items) != 10 {
		t.Fatalf("%d scheduled runs after the refusal, want 10", len(items))
	}
	// The refusal reaches the project's webhook, once (one replica claimed the fire); the passed
	// runs, which the rule (failure) does not take, send nothing.
	var got []notifytest.Received
	for deadline := time.Now().Add(20 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		got = hook.Got()
	}
	time.Sleep(time.Second) // a second delivery would come now
	got = hook.Got()
	if len(got) != 1 || got[0].Event != "schedule.refused" || !strings.Contains(fmt.Sprint(got[0].Body), "Image not allowed") {
		t.Fatalf("webhook events after the refusal: %+v", got)
	}
}
