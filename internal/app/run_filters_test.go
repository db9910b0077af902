//go:build integration

package app_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestRunFilterLimits: the run list's projectId and image filters have the shape of what a run
// can hold (the page cache keys on them); anything else is a 400 Validation error naming the
// filter in a few words, on the API and on the dashboard's /runs.
func TestRunFilterLimits(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("filters@example.com", "Filter Co")
		a := bearer(admin.token)
		p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage})
		expect(t, p, 201, "")
		project := p.str("project", "id")
		h.queue(a, map[string]any{"projectId": project, "taskId": "filtered"})

		long := strings.Repeat("a", 900<<10)
		for _, c := range []struct{ query, message string }{
			{"projectId=abc", `projectId filter "abc" is not a project ID (24 hexadecimal characters)`},
			{"projectId=" + long, `projectId filter "` + long[:64] + `…" is not a project ID (24 hexadecimal characters)`},
			{"projectId=" + project + "0", `projectId filter "` + project + `0" is not a project ID (24 hexadecimal characters)`},
			{"image=" + long, `image filter "` + long[:64] + `…" is not a valid image reference (at most 512 characters)`},
			{"image=" + strings.Repeat("a", 513), `image filter "` + long[:64] + `…" is not a valid image reference (at most 512 characters)`},
			{"image=" + url.QueryEscape("not an image"), `image filter "not an image" is not a valid image reference (at most 512 characters)`},
			{"status=" + strings.Repeat("FAILED,", 1000) + "DONE", `unknown status "DONE"`},
		} {
			r := h.do("GET", "/api/executions?"+c.query, a, nil)
			expect(t, r, 400, "Validation error")
			if r.str("message") != c.message {
				t.Fatalf("GET /api/executions?%.80s: message %q, want %q", c.query, r.str("message"), c.message)
			}
		}
		// Well-formed filters still list: the project's run, its image, a status repeated.
		for _, q := range []string{"projectId=" + project, "image=" + url.QueryEscape(passImage),
			"status=" + strings.Repeat("pending,", 1000) + "PENDING", "projectId=" + strings.Repeat("0", 24)} {
			r := h.do("GET", "/api/executions?"+q, a, nil)
			expect(t, r, 200, "")
			want := 1.0
			if strings.HasPrefix(q, "projectId=0000") {
				want = 0
			}
			if r.get("data", "total") != want {
				t.Fatalf("GET /api/executions?%.80s: %s", q, r.raw)
			}
		}

		// The dashboard's run list refuses the same with its error page.
		b := h.withSession(t, admin.token)
		for _, q := range []string{"project=abc", "project=" + long} {
			wantStatus(t, "/runs?"+q[:min(len(q), 20)], b.get("/runs?"+q), 400, "is not a project ID (24 hexadecimal characters)")
		}
		if r := b.get("/runs?project=" + project); r.status != 200 || !strings.Contains(r.body, `data-task="filtered"`) {
			t.Fatalf("/runs?project=%s: %d", project, r.status)
		}
	})
}
