//go:build integration

package app_test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/notify/notifytest"
	"verdict/internal/testenv"
)

// notifyHarness runs suites on the engine, with the fake receivers' address allowed and quick
// retries.
func notifyHarness(t *testing.T, o harnessOpts) *harness {
	testenv.DockerHost(t)
	o.realClock, o.workers, o.lease = true, true, 2*time.Second
	o.env = map[string]string{"VERDICT_EGRESS_ALLOW": "127.0.0.1", "VERDICT_NOTIFY_RETRY_BASE": "200ms"}
	return newHarness(t, o)
}

// waitDeliveries polls a notification's deliveries until cond holds.
func (h *harness) waitDeliveries(a auth, project, nid string, timeout time.Duration, cond func([]any) bool) []any {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := h.do("GET", "/api/projects/"+project+"/notifications/"+nid+"/deliveries", a, nil)
		expect(h.t, r, 200, "")
		list, _ := r.get("data", "deliveries").([]any)
		if cond(list) {
			return list
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("deliveries of %s: condition not met in %s; last: %s", nid, timeout, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitGot(t *testing.T, rc *notifytest.Receiver, n int, timeout time.Duration) []notifytest.Received {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := rc.Got()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver accepted %d of %d messages in %s (refused: %q)", len(got), n, timeout, rc.Refused())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockedLog collects the service's log.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// A failing run on the engine reaches a Slack, a Teams and a webhook receiver once each, in the
// shapes they take and signed; members read the notifications and deliveries (hosts only), only
// admins change them, another organization gets 404s; a redelivery repeats the event's ID; the
// URLs and secrets are in no answer and no log line.
func TestNotificationsEndToEnd(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			logs := &lockedLog{}
			h := notifyHarness(t, harnessOpts{dialect: d, log: logs})
			admin := h.signup("notify@example.com", "Notify Co")
			a := bearer(admin.token)
			viewer := bearer(h.join(admin, "viewer@example.com", "viewer").token)
			other := bearer(h.signup("other@example.com", "Other Co").token)
			p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage})
			expect(t, p, 201, "")
			project := p.str("project", "id")
			base := "/api/projects/" + project + "/notifications"

			slack, teams := notifytest.Slack(t), notifytest.Teams(t)
			const secret = "whsec_test_0123456789abcdef"
			hook := notifytest.Webhook(t, "", secret)
			urls := map[string]string{"slack": slack.URL + "/services/T000/B000/slack-token-path",
				"teams": teams.URL + "/workflows/teams-token-path", "webhook": hook.URL + "/hooks/webhook-token-path"}
			ids := map[string]string{}
			for _, kind := range []string{"slack", "teams", "webhook"} {
				body := map[string]any{"kind": kind, "url": urls[kind], "on": []string{"failure"}}
				if kind == "webhook" {
					body["secret"] = secret
				}
				expect(t, h.do("POST", base, viewer, body), 403, "Forbidden")
				expect(t, h.do("POST", "/api/projects/"+project+"/notifications", other, body), 404, "Project not found")
				r := h.do("POST", base, a, body)
				expect(t, r, 201, "")
				if strings.Contains(r.raw, "token-path") || r.str("data", "notification", "host") != "127.0.0.1" {
					t.Fatalf("create answer: %s", r.raw)
				}
				if kind == "webhook" && r.str("data", "notification", "secret") != secret {
					t.Fatalf("the webhook's secret is not shown once: %s", r.raw)
				}
				ids[kind] = r.str("data", "notification", "id")
			}
			gen := h.do("POST", base, a, map[string]any{"kind": "webhook", "url": hook.URL + "/other", "on": []string{"recovery"}})
			expect(t, gen, 201, "")
			if s := gen.str("data", "notification", "secret"); !strings.HasPrefix(s, "whsec_") || len(s) != 6+64 {
				t.Fatalf("a generated secret: %s", gen.raw)
			}
			expect(t, h.do("POST", base, a, map[string]any{"kind": "webhook", "url": hook.URL, "on": []string{"always"}, "extra": 1}), 400, "Invalid request")

			list := h.do("GET", base, viewer, nil)
			expect(t, list, 200, "")
			if n := len(list.get("data", "notifications").([]any)); n != 4 || strings.Contains(list.raw, "token-path") || strings.Contains(list.raw, "whsec_") {
				t.Fatalf("list (%d): %s", n, list.raw)
			}
			expect(t, h.do("GET", base, other, nil), 404, "Project not found")
			expect(t, h.do("GET", base+"/"+ids["webhook"]+"/deliveries", other, nil), 404, "Notification not found")
			expect(t, h.do("DELETE", base+"/"+ids["webhook"], other, nil), 404, "Notification not found")
			expect(t, h.do("DELETE", base+"/"+gen.str("data", "notification", "id"), viewer, nil), 403, "Forbidden")
			expect(t, h.do("DELETE", base+"/"+gen.str("data", "notification", "id"), a, nil), 200, "")
			expect(t, h.do("DELETE", base+"/"+gen.str("data", "notification", "id"), a, nil), 404, "Notification not found")

			task := h.queue(a, map[string]any{"projectId": project, "envVars": map[string]string{"FAIL_TESTS": "health endpoint returns 200"}})
			run := h.waitFor(a, task, 90*time.Second, final)
			if run.str("execution", "status") != "FAILED" {
				t.Fatalf("run: %s", run.raw)
			}
			for name, rc := range map[string]*notifytest.Receiver{"slack": slack, "teams": teams, "webhook": hook} {
				waitGot(t, rc, 1, 30*time.Second)
				time.Sleep(300 * time.Millisecond) // nothing more comes
				if got := rc.Got(); len(got) != 1 || len(rc.Refused()) != 0 {
					t.Fatalf("%s accepted %d messages, refused %q; want one", name, len(got), rc.Refused())
				}
			}
			ev := hook.Got()[0]
			r := ev.Body["run"].(map[string]any)
			if ev.Event != "run.finished" || r["taskId"] != task || r["status"] != "FAILED" || r["url"] != publicURL+"/runs/"+task ||
				!strings.Contains(fmt.Sprint(r["failingTests"]), "health endpoint returns 200") {
				t.Fatalf("the webhook's event: %+v", ev.Body)
			}
			ds := h.waitDeliveries(viewer, project, ids["webhook"], 10*time.Second, func(l []any) bool {
				return len(l) == 1 && l[0].(map[string]any)["status"] == "delivered"
			})
			d0 := ds[0].(map[string]any)
			if d0["statusCode"] != 200.0 || d0["attempts"] != 1.0 || d0["eventId"] != ev.EventID || d0["event"] != "run.finished" {
				t.Fatalf("the delivery: %v", d0)
			}
			did := d0["id"].(string)
			redeliver := base + "/" + ids["webhook"] + "/deliveries/" + did + "/redeliver"
			expect(t, h.do("POST", redeliver, viewer, nil), 403, "Forbidden")
			expect(t, h.do("POST", redeliver, other, nil), 404, "Notification not found")
			expect(t, h.do("POST", base+"/"+ids["slack"]+"/deliveries/"+did+"/redeliver", a, nil), 404, "Delivery not found")
			expect(t, h.do("POST", redeliver, a, nil), 202, "")
			again := waitGot(t, hook, 2, 30*time.Second)
			if again[1].EventID != ev.EventID {
				t.Fatalf("redelivered with another event ID: %s, first %s", again[1].EventID, ev.EventID)
			}
			for _, s := range []string{"token-path", secret} {
				if strings.Contains(logs.String(), s) {
					t.Fatalf("the log holds %q", s)
				}
			}
		})
	}
}

// Without VERDICT_EGRESS_ALLOW a receiver on the loopback, a private network or the metadata
// address is refused when it is saved, naming what is wrong.
func TestNotificationsRefuseInternalURLs(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	admin := h.signup("guard@example.com", "Guard Co")
	a := bearer(admin.token)
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage})
	expect(t, p, 201, "")
	base := "/api/projects/" + p.str("project", "id") + "/notifications"
	for url, want := range map[string]string{
		"http://127.0.0.1:8080/hook":                  "url 127.0.0.1 is a loopback, private, link-local or reserved address",
		"http://169.254.169.254/latest/meta-data/iam": "url 169.254.169.254 is a loopback, private, link-local or reserved address",
		"http://[::1]/hook":                           "url ::1 is a loopback, private, link-local or reserved address",
		"http://192.168.1.10/hook":                    "url 192.168.1.10 is a loopback, private, link-local or reserved address",
		"http://localhost/hook":                       "url localhost is the loopback host",
	} {
		r := h.do("POST", base, a, map[string]any{"kind": "webhook", "url": url, "on": []string{"always"}})
		expect(t, r, 400, "Validation error")
		if r.str("message") != want {
			t.Errorf("%s: %q, want %q", url, r.str("message"), want)
		}
	}
	list := h.do("GET", base, a, nil)
	expect(t, list, 200, "")
	if n := len(list.get("data", "notifications").([]any)); n != 0 {
		t.Fatalf("refused notifications were stored: %s", list.raw)
	}
}

// A webhook receiver that is down through several retries (5 s after the first failed
// attempts, with the test's 200 ms retry base), then answers 500, then 200, gets each event
// exactly once: two failed runs' run.finished, retried with backoff.
func TestNotificationWebhookOutage(t *testing.T) {
	h := notifyHarness(t, harnessOpts{dialect: "postgres"})
	admin := h.signup("outage@example.com", "Outage Co")
	a := bearer(admin.token)
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage})
	expect(t, p, 201, "")
	project := p.str("project", "id")
	// A port nothing listens on yet: connections are refused until the receiver starts there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	const secret = "whsec_outage_0123456789abcdef"
	r := h.do("POST", "/api/projects/"+project+"/notifications", a, map[string]any{"kind": "webhook", "url": "http://" + addr + "/hook",
		"on": []string{"failure"}, "secret": secret})
	expect(t, r, 201, "")
	nid := r.str("data", "notification", "id")

	var tasks []string
	for range 2 {
		tasks = append(tasks, h.queue(a, map[string]any{"projectId": project, "envVars": map[string]string{"FAIL_TESTS": "health endpoint returns 200"}}))
	}
	for _, task := range tasks {
		h.waitFor(a, task, 90*time.Second, final)
	}
	h.waitDeliveries(a, project, nid, 30*time.Second, func(l []any) bool {
		if len(l) != 2 {
			return false
		}
		for _, d := range l {
			if m := d.(map[string]any); m["attempts"].(float64) < 1 || m["statusCode"] != 0.0 || m["status"] != "pending" {
				return false
			}
		}
		return true
	})
	time.Sleep(5 * time.Second) // the receiver stays down through several retries
	rc := notifytest.Webhook(t, addr, secret)
	var mu sync.Mutex
	fails := 0
	rc.Answer(func() int {
		mu.Lock()
		defer mu.Unlock()
		if fails < 2 {
			fails++
			return 500
		}
		return 200
	})
	waitGot(t, rc, 2, 90*time.Second)
	time.Sleep(2 * time.Second) // nothing more comes
	got := rc.Got()
	seen := map[string]int{}
	for _, g := range got {
		seen[g.EventID]++
	}
	if len(got) != 2 || len(seen) != 2 || len(rc.Refused()) != 0 {
		t.Fatalf("accepted %d events (%v), refused %q; want each of the 2 once", len(got), seen, rc.Refused())
	}
	ds := h.waitDeliveries(a, project, nid, 10*time.Second, func(l []any) bool {
		return len(l) == 2 && l[0].(map[string]any)["status"] == "delivered" && l[1].(map[string]any)["status"] == "delivered"
	})
	t.Logf("deliveries after the outage: %v (receiver reached %d times)", ds, rc.Attempts())
}

// A delivery pending when the App stops is made by the next App on the same database.
func TestNotificationSurvivesRestart(t *testing.T) {
	dbURL := testenv.PostgresDB(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	const secret = "whsec_restart_0123456789abcdef"
	var admin account
	var project, nid string
	t.Run("first", func(t *testing.T) {
		h := notifyHarness(t, harnessOpts{databaseURL: dbURL})
		admin = h.signup("restart@example.com", "Restart Co")
		a := bearer(admin.token)
		p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage})
		expect(t, p, 201, "")
		project = p.str("project", "id")
		r := h.do("POST", "/api/projects/"+project+"/notifications", a, map[string]any{"kind": "webhook", "url": "http://" + addr + "/hook",
			"on": []string{"failure"}, "secret": secret})
		expect(t, r, 201, "")
		nid = r.str("data", "notification", "id")
		h.waitFor(a, h.queue(a, map[string]any{"projectId": project, "envVars": map[string]string{"FAIL_TESTS": "health endpoint returns 200"}}),
			90*time.Second, final)
		h.waitDeliveries(a, project, nid, 30*time.Second, func(l []any) bool {
			return len(l) == 1 && l[0].(map[string]any)["attempts"].(float64) >= 1
		})
	}) // the App is closed here, its delivery pending
	rc := notifytest.Webhook(t, addr, secret)
	h := notifyHarness(t, harnessOpts{databaseURL: dbURL})
	got := waitGot(t, rc, 1, 60*time.Second)
	if got[0].Event != "run.finished" {
		t.Fatalf("after the restart: %+v", got[0])
	}
	h.waitDeliveries(bearer(admin.token), project, nid, 10*time.Second, func(l []any) bool {
		return len(l) == 1 && l[0].(map[string]any)["status"] == "delivered"
	})
	time.Sleep(time.Second)
	if n := len(rc.Got()); n != 1 {
		t.Fatalf("delivered %d times after the restart", n)
	}
}
