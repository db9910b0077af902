//go:build integration

package app_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
)

// The server's image policy bounds every organization; an admin narrows it for their own.
func TestImagePolicy(t *testing.T) {
	forEachDBWith(t, harnessOpts{env: map[string]string{"VERDICT_ALLOWED_IMAGES": "verdict-examples/*"}}, func(t *testing.T, h *harness) {
		admin := h.signup("ada@example.com", "Acme")
		dev := h.join(admin, "dan@example.com", "developer")
		other := h.signup("oz@example.com", "Other")
		h.setPlan(admin.orgID, domain.PlanEnterprise)
		h.setPlan(other.orgID, domain.PlanEnterprise)
		a := bearer(admin.token)

		h.queue(a, map[string]any{"image": "verdict-examples/pass"})
		h.queue(a, map[string]any{"image": "docker.io/verdict-examples/fail:latest"})
		for _, image := range []string{"debian:bookworm", "127.0.0.1:18651/x", "verdict-base/debian-pytest"} {
			expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": image}), 403, "Image not allowed")
		}
		expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": "Not An/Image"}), 400, "Validation error")
		expect(t, h.do("POST", "/api/projects", a, map[string]any{"name": "P", "image": "bad image"}), 400, "Validation error")

		// The organization narrows the server's list; patterns outside it widen nothing.
		expect(t, h.do("PATCH", "/api/organization", bearer(dev.token), map[string]any{"allowedImages": []string{"*"}}), 403, "Forbidden")
		expect(t, h.do("PATCH", "/api/organization", a, map[string]any{"allowedImages": []string{"has space"}}), 400, "Validation error")
		r := h.do("PATCH", "/api/organization", a, map[string]any{"allowedImages": []string{"verdict-examples/pass", "debian"}})
		expect(t, r, 200, "")
		if got := r.get("organization", "allowedImages"); len(got.([]any)) != 2 {
			t.Fatalf("allowedImages after PATCH: %s", r.raw)
		}
		if got := h.do("GET", "/api/organization", bearer(dev.token), nil); !strings.Contains(got.raw, `"allowedImages":["verdict-examples/pass","debian"]`) {
			t.Fatalf("GET organization: %s", got.raw)
		}
		h.queue(bearer(dev.token), map[string]any{"image": "verdict-examples/pass:latest"})
		expect(t, h.do("POST", "/api/executions", bearer(dev.token), map[string]any{"image": "verdict-examples/fail"}), 403, "Image not allowed")
		expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": "debian"}), 403, "Image not allowed")
		expect(t, h.do("GET", "/api/tests-structure?image=verdict-examples/fail", bearer(dev.token), nil), 403, "Image not allowed")
		// Another organization keeps the server's policy alone.
		h.queue(bearer(other.token), map[string]any{"image": "verdict-examples/fail"})
		// An empty list removes the organization's patterns.
		expect(t, h.do("PATCH", "/api/organization", a, map[string]any{"allowedImages": []string{}}), 200, "")
		h.queue(a, map[string]any{"image": "verdict-examples/fail"})
	})
}

// tests-structure never lets a viewer make the engine contact a registry, and never tells an
// open registry port from a closed one.
func TestTestsStructureImages(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	admin := h.signup("ada@example.com", "Acme")
	viewer := h.join(admin, "vi@example.com", "viewer")
	dev := h.join(admin, "dan@example.com", "developer")

	r := h.do("GET", "/api/tests-structure?image="+passImage, bearer(viewer.token), nil)
	expect(t, r, 200, "")
	if got := r.get("data", "folders").([]any); len(got) != 2 || r.get("data", "note") != nil {
		t.Fatalf("tests-structure: %s", r.raw)
	}
	// An image without /app/tests is not an upstream failure.
	r = h.do("GET", "/api/tests-structure?image=verdict-base/debian-pytest:latest", bearer(viewer.token), nil)
	expect(t, r, 200, "")
	if got := r.get("data", "folders").([]any); len(got) != 0 || !strings.Contains(r.str("data", "note"), "/app/tests") {
		t.Fatalf("tests-structure of an image without tests: %s", r.raw)
	}

	// A "registry" on a local port: the viewer's request must not reach it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hits := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			hits <- struct{}{}
		}
	}()
	open := ln.Addr().String() + "/probe:latest"
	r = h.do("GET", "/api/tests-structure?image="+open, bearer(viewer.token), nil)
	expect(t, r, 404, "Image not found")
	select {
	case <-hits:
		t.Fatal("a viewer's tests-structure request made the engine contact a registry")
	case <-time.After(300 * time.Millisecond):
	}

	// A developer may make the engine pull, but the answer is the same whether the port is
	// open or closed, and carries none of the engine's text.
	closed := closedPort(t) + "/probe:latest"
	ro := h.do("GET", "/api/tests-structure?image="+open, bearer(dev.token), nil)
	rc := h.do("GET", "/api/tests-structure?image="+closed, bearer(dev.token), nil)
	if ro.status != rc.status || ro.str("error") != rc.str("error") ||
		strings.ReplaceAll(ro.str("message"), open, "X") != strings.ReplaceAll(rc.str("message"), closed, "X") {
		t.Fatalf("open and closed ports answer differently:\n%s\n%s", ro.raw, rc.raw)
	}
	for _, leak := range []string{"connection refused", "EOF", "http", "dial", "tcp"} {
		if strings.Contains(strings.ToLower(ro.raw+rc.raw), strings.ToLower(leak)) {
			t.Fatalf("tests-structure leaks the engine's error (%q): %s %s", leak, ro.raw, rc.raw)
		}
	}
}

// closedPort returns a loopback address on which nothing listens.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Each plan caps a run's timeout; the default timeout is brought within the cap.
func TestPlanTimeoutCaps(t *testing.T) {
	h := newHarness(t, harnessOpts{env: map[string]string{"VERDICT_PLAN_TIMEOUTS": "team=1h"}})
	admin := h.signup("ada@example.com", "Acme")
	a := bearer(admin.token)

	r := h.do("POST", "/api/executions", a, map[string]any{"image": passImage, "timeoutSeconds": 901})
	expect(t, r, 400, "Validation error")
	if !strings.Contains(r.str("message"), "900") || !strings.Contains(r.str("message"), "free") {
		t.Fatalf("message: %s", r.raw)
	}
	if got := h.do("GET", "/api/executions/"+h.queue(a, map[string]any{"image": passImage}), a, nil).get("execution", "timeoutSeconds"); got != float64(900) {
		t.Fatalf("free plan default timeout %v, want 900 (15 minutes)", got)
	}
	h.queue(a, map[string]any{"image": passImage, "timeoutSeconds": 900})
	if got := h.do("GET", "/config/defaults", a, nil).get("data", "timeoutSeconds"); got != float64(900) {
		t.Fatalf("config defaults timeout %v, want 900", got)
	}
	// A project's longer timeout is brought within the cap rather than refused.
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Long", "image": passImage, "timeoutSeconds": 7200})
	expect(t, p, 201, "")
	if got := h.do("GET", "/api/executions/"+h.queue(a, map[string]any{"projectId": p.str("project", "id")}), a, nil).get("execution", "timeoutSeconds"); got != float64(900) {
		t.Fatalf("project run timeout %v, want 900", got)
	}

	h.setPlan(admin.orgID, domain.PlanTeam) // capped at 1h by the setting
	expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": passImage, "timeoutSeconds": 3601}), 400, "Validation error")
	h.queue(a, map[string]any{"image": passImage, "timeoutSeconds": 3600})
	if got := h.do("GET", "/config/defaults", a, nil).get("data", "timeoutSeconds"); got != float64(1800) {
		t.Fatalf("team default timeout %v, want the house default 1800", got)
	}
	h.setPlan(admin.orgID, domain.PlanEnterprise)
	h.queue(a, map[string]any{"image": passImage, "timeoutSeconds": 86400})
}

// setPlan moves an organization to a plan, as the payment provider's webhook would.
func (h *harness) setPlan(orgID string, plan domain.Plan) {
	h.t.Helper()
	org, err := h.app.Store.Organizations().Get(context.Background(), orgID)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.app.Store.Organizations().UpdatePlan(context.Background(), orgID, plan, org.Billing); err != nil {
		h.t.Fatal(err)
	}
}
