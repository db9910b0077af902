package realtime

import (
	"fmt"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// awaitFanOut emits probes from `from` until `to` receives one, so that the receiving hub's
// Redis subscription (the adapter subscribes asynchronously) is known to be live; then it drains
// the probes from `to` and the other members of org.
func awaitFanOut(t *testing.T, from *Hub, org string, to *sioClient, othersInOrg ...*sioClient) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for crossed := false; !crossed; {
		if time.Now().After(deadline) {
			t.Fatal("no probe crossed Redis within 10s")
		}
		from.Emit(org, "probe", nil)
		select {
		case p := <-to.packets:
			if name, _, _ := parseEvent(p); name != "probe" {
				t.Fatalf("got %q, want a probe", p)
			}
			crossed = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, c := range append(othersInOrg, to) {
		for drained := false; !drained; {
			select {
			case p := <-c.packets:
				if name, _, _ := parseEvent(p); name != "probe" {
					t.Fatalf("got %q, want a probe", p)
				}
			case <-time.After(300 * time.Millisecond):
				drained = true
			}
		}
	}
}

func TestRedisFansOutAcrossHubs(t *testing.T) {
	redisURL, prefix := testenv.RedisURL(t), testenv.KeyPrefix(t)
	hubA, srvA := start(t, Options{RedisURL: redisURL, RedisPrefix: prefix})
	hubB, srvB := start(t, Options{RedisURL: redisURL, RedisPrefix: prefix})
	// A third replica of another deployment sharing the Redis server must hear nothing.
	_, srvC := start(t, Options{RedisURL: redisURL, RedisPrefix: testenv.KeyPrefix(t)})

	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			onA := member(t, srvA.URL, tr, "acme", "alice")
			onB := member(t, srvB.URL, tr, "acme", "bob")
			otherOrgOnB := member(t, srvB.URL, tr, "globex", "gina")
			otherDeploymentOnC := member(t, srvC.URL, tr, "acme", "carl")
			awaitFanOut(t, hubB, "acme", onA, onB)
			awaitFanOut(t, hubA, "acme", onB, onA)

			// A struct payload keeps its JSON field names on the other replica too (the adapter
			// carries payloads as msgpack, which knows nothing of json tags).
			hubB.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "run-1", Log: "from B\n"})
			for _, c := range []*sioClient{onA, onB} {
				if got := decode[map[string]any](t, c.expectEvent(EventExecutionLog)); got["taskId"] != "run-1" || got["log"] != "from B\n" {
					t.Fatalf("got %v", got)
				}
			}
			hubA.Emit("acme", EventExecutionUpdated, map[string]any{"taskId": "run-1", "status": "PASSED"})
			for _, c := range []*sioClient{onA, onB} {
				if got := decode[map[string]any](t, c.expectEvent(EventExecutionUpdated)); got["status"] != "PASSED" {
					t.Fatalf("got %v", got)
				}
			}

			// Order survives the hop through Redis.
			const n = 1000
			for i := range n {
				hubB.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "run-2", Log: fmt.Sprintf("%d\n", i)})
			}
			for i, l := range onA.logLines("run-2", n) {
				if l != fmt.Sprintf("%d\n", i) {
					t.Fatalf("line %d on hub A is %q", i, l)
				}
			}
			onB.logLines("run-2", n)

			otherOrgOnB.quiet(300 * time.Millisecond)
			otherDeploymentOnC.quiet(0)
		})
	}
}

// EndUserSessions on one replica ends the user's sockets on the others.
func TestEndUserSessionsAcrossHubs(t *testing.T) {
	redisURL, prefix := testenv.RedisURL(t), testenv.KeyPrefix(t)
	hubA, _ := start(t, Options{RedisURL: redisURL, RedisPrefix: prefix})
	_, srvB := start(t, Options{RedisURL: redisURL, RedisPrefix: prefix})
	onB := member(t, srvB.URL, "websocket", "acme", "bob")
	awaitFanOut(t, hubA, "acme", onB)
	hubA.EndUserSessions("bob")
	got := decode[map[string]any](t, onB.expectEvent(EventAuthError))
	if got["error"] != errSessionEnded {
		t.Fatalf("auth-error %v", got)
	}
	if p := onB.next(5 * time.Second); p != "1" {
		t.Fatalf("after auth-error got %q, want the DISCONNECT packet", p)
	}
}
