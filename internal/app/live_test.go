//go:build integration

package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	sio "github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

type sioEvent struct {
	name string
	data map[string]any
}

// dialSocket connects the Socket.IO Go client with a JWT and records every event in order.
func dialSocket(t *testing.T, url, token string) chan sioEvent {
	t.Helper()
	return dialSocketAuth(t, url, map[string]any{"token": token})
}

// dialSocketAuth is dialSocket with the handshake's auth object as given.
func dialSocketAuth(t *testing.T, url string, auth map[string]any) chan sioEvent {
	t.Helper()
	opts := sio.DefaultOptions()
	opts.SetForceNew(true)
	opts.SetReconnection(false)
	opts.SetTransports(types.NewSet(sio.WebSocket))
	opts.SetAuth(auth)
	opts.SetAutoConnect(false) // listen first, then connect: auth-success must not be missed
	sock, err := sio.Connect(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan sioEvent, 10000)
	sock.OnAny(func(args ...any) {
		name, _ := args[0].(string)
		var data map[string]any
		if len(args) > 1 {
			data, _ = args[1].(map[string]any)
		}
		events <- sioEvent{name, data}
	})
	sock.Connect()
	t.Cleanup(func() { sock.Disconnect() })
	return events
}

func nextEvent(t *testing.T, ch chan sioEvent, d time.Duration) sioEvent {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(d):
		t.Fatalf("no event within %s", d)
		return sioEvent{}
	}
}

// TestLiveUpdates follows a real run over Socket.IO: status changes and log lines arrive while
// the container runs, in order, only to the run's organization.
func TestLiveUpdates(t *testing.T) {
	h := runHarness(t, "sqlite")
	a := h.signup("live@example.com", "Live Co")
	b := h.signup("watcher@example.com", "Watcher Co")
	evA := dialSocket(t, h.srv.URL, a.token)
	evB := dialSocket(t, h.srv.URL, b.token)
	if e := nextEvent(t, evA, 10*time.Second); e.name != "auth-success" || e.data["organizationId"] != a.orgID || e.data["role"] != "admin" {
		t.Fatalf("auth: %+v", e)
	}
	if e := nextEvent(t, evB, 10*time.Second); e.name != "auth-success" {
		t.Fatalf("auth B: %+v", e)
	}
	bad := dialSocket(t, h.srv.URL, "forged.token.value")
	if e := nextEvent(t, bad, 10*time.Second); e.name != "auth-error" {
		t.Fatalf("forged token: %+v", e)
	}

	task := h.queue(bearer(a.token), map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "10", "INTERVAL_MS": "150"}})
	var statuses []string
	var logs strings.Builder
	logsWhileRunning := false
	for done := false; !done; {
		e := nextEvent(t, evA, 60*time.Second)
		switch e.name {
		case "execution-updated":
			if e.data["taskId"] != task {
				t.Fatalf("update of another run: %+v", e.data)
			}
			st := e.data["status"].(string)
			if len(statuses) == 0 || statuses[len(statuses)-1] != st {
				statuses = append(statuses, st)
			}
			done = st == "PASSED" || st == "FAILED" || st == "ERROR"
		case "execution-log":
			if e.data["taskId"] != task {
				t.Fatalf("log of another run: %+v", e.data)
			}
			logs.WriteString(e.data["log"].(string))
			if statuses[len(statuses)-1] == "RUNNING" && strings.Contains(logs.String(), "line 1 of 10") {
				logsWhileRunning = true
			}
		}
	}
	if strings.Join(statuses, ",") != "PENDING,RUNNING,PASSED" {
		t.Fatalf("statuses %v", statuses)
	}
	if !logsWhileRunning {
		t.Fatal("no log line arrived while the run was running")
	}
	text := logs.String()
	last := -1
	for i := 1; i <= 10; i++ {
		at := strings.Index(text, fmt.Sprintf("line %d of 10\n", i))
		if at <= last {
			t.Fatalf("line %d missing or out of order in:\n%s", i, text)
		}
		last = at
	}
	// The other organization heard nothing of it.
	select {
	case e := <-evB:
		t.Fatalf("another organization received %q: %+v", e.name, e.data)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestLiveSessionsEndWithAccess: a socket stops with its user's access to the organization:
// suspension and moving to another organization send auth-error and end it at once, so it
// hears none of the organization's later events.
func TestLiveSessionsEndWithAccess(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_RUNNER": "none"}})
	admin := h.signup("ada@example.com", "Live Co")
	dev := h.join(admin, "dev@example.com", "developer")
	mover := h.signup("bob@example.com", "Old Co")
	evAdmin := dialSocket(t, h.srv.URL, admin.token)
	evDev := dialSocket(t, h.srv.URL, dev.token)
	evMover := dialSocket(t, h.srv.URL, mover.token)
	for _, ev := range []chan sioEvent{evAdmin, evDev, evMover} {
		if e := nextEvent(t, ev, 10*time.Second); e.name != "auth-success" {
			t.Fatalf("auth: %+v", e)
		}
	}

	expect(t, h.do("PATCH", "/api/users/"+dev.id+"/status", bearer(admin.token), map[string]any{"status": "suspended"}), 200, "")
	if e := nextEvent(t, evDev, 10*time.Second); e.name != "auth-error" || !strings.Contains(fmt.Sprint(e.data["error"]), "Session ended") {
		t.Fatalf("suspended member's socket: %+v", e)
	}

	h.clock.Advance(time.Second) // the invitation is the newest mail to the mover
	_, token := h.invite(admin, mover.email, "viewer")
	expect(t, h.do("POST", "/api/invitations/accept", bearer(mover.token), map[string]any{"token": token}), 200, "")
	if e := nextEvent(t, evMover, 10*time.Second); e.name != "auth-error" {
		t.Fatalf("moved member's old socket: %+v", e)
	}

	// Later events reach the admin only.
	h.queue(bearer(admin.token), map[string]any{"image": "img"})
	if e := nextEvent(t, evAdmin, 10*time.Second); e.name != "execution-updated" {
		t.Fatalf("admin: %+v", e)
	}
	select {
	case e := <-evDev:
		t.Fatalf("suspended member still hears: %+v", e)
	case e := <-evMover:
		t.Fatalf("moved member's old socket still hears: %+v", e)
	case <-time.After(500 * time.Millisecond):
	}
}
