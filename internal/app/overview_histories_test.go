//go:build integration

package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/web"
)

// TestOverviewAndInsightsFromHistories: the run-health overview's flaky tests and recent
// failures, and an image's insights' flaky tests, come from the tests' histories, on both
// databases with the real engine. On one branch, health flips between passes and failures on
// one commit (two flake events: flaky by its window); dashboard fails on a new commit and
// passes on the next (a regression then a fix: no flake event, not flaky, though it both
// passed and failed); checkout passes only on a retry. The overview lists health and checkout,
// never dashboard; each recent failure names its first failed test by suite and name; the
// insights of the pass image list health (flaky by its window, though it never passed on a
// retry), those of the flaky image checkout and health.
func TestOverviewAndInsightsFromHistories(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin := h.signup("health@example.com", "Health Co")
			a := bearer(admin.token)
			p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage})
			expect(t, p, 201, "")
			project := p.str("project", "id")

			const health, dashboard = "health endpoint returns 200", "dashboard lists recent runs"
			recorded := 0
			run := func(image, commit, fail string) string {
				t.Helper()
				body := map[string]any{"projectId": project, "image": image, "labels": map[string]string{"branch": "main", "commit": commit}}
				if fail != "" {
					body["envVars"] = map[string]any{"FAIL_TESTS": fail}
				}
				task := h.queue(a, body)
				h.waitFor(a, task, 90*time.Second, final)
				// The post-run chain records a run's results just after its final write: wait
				// for them (every run has the health test).
				recorded++
				deadline := time.Now().Add(30 * time.Second)
				for {
					l := h.do("GET", "/api/tests?projectId="+project+"&q="+url.QueryEscape(health), a, nil)
					if tests, _ := l.get("data", "tests").([]any); len(tests) == 1 && tests[0].(map[string]any)["runs"] == float64(recorded) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("run %s not recorded: %s", task, l.raw)
					}
					time.Sleep(100 * time.Millisecond)
				}
				return task
			}
			r1 := run(passImage, "c1", health)    // health fails
			run(passImage, "c1", "")              // passes: a flake event
			r3 := run(passImage, "c1", health)    // fails again on the same commit: a second one
			r4 := run(passImage, "c2", dashboard) // dashboard fails on a new commit: a regression
			run(passImage, "c3", "")              // and passes on the next: a fix
			r6 := run(flakyImage, "c3", "")       // checkout passes on a retry
			if s := h.do("GET", "/api/executions/"+r4, a, nil).str("execution", "status"); s != "FAILED" {
				t.Fatalf("the regression's run is %s", s)
			}

			// The dashboard, with the session of the admin.
			b := h.browser(t)
			u, _ := url.Parse(h.srv.URL)
			b.c.Jar.SetCookies(u, []*http.Cookie{{Name: web.SessionCookie, Value: admin.token}})
			pg := b.get("/overview")
			wantStatus(t, "overview", pg, 200, "Recent failures")
			flaky := tableRows(pg.body, "flaky")
			// Test, Project, Passed, Failed, Passed on retry, Retried, Last failed or retried in.
			want := [][]string{
				{"[chromium] api/health.spec.ts › " + health, "Web", "4", "2", "0", "0", r3},
				{"[chromium] ui/home.spec.ts › checkout button opens the cart", "Web", "0", "0", "1", "1", r6},
			}
			if len(flaky) != len(want) {
				t.Fatalf("flaky tests: %q, want %q", flaky, want)
			}
			for i, row := range flaky {
				if len(row) != 7 || !slices.Equal(row[:6], want[i][:6]) || !strings.HasPrefix(row[6], want[i][6]+" ") {
					t.Errorf("flaky test %d: %q, want %q", i, row, want[i])
				}
			}
			failures := tableRows(pg.body, "failures")
			wantFailed := [][2]string{{r4, "[chromium] ui/dashboard.spec.ts › " + dashboard}, {r3, "[chromium] api/health.spec.ts › " + health},
				{r1, "[chromium] api/health.spec.ts › " + health}}
			if len(failures) != len(wantFailed) {
				t.Fatalf("recent failures: %q", failures)
			}
			for i, row := range failures {
				if row[0] != wantFailed[i][0] || !strings.HasPrefix(row[4], wantFailed[i][1]) ||
					!strings.Contains(row[4], "Error: failed on request (FAIL_TESTS)") {
					t.Errorf("recent failure %d: %q, want %q", i, row, wantFailed[i])
				}
			}

			// The insights: health is flaky by its window in the pass image's runs; the flaky
			// image's run adds checkout.
			m := h.do("GET", "/api/metrics/"+passImage, a, nil)
			expect(t, m, 200, "")
			if m.get("data", "sampleSize") != 5.0 || !slices.Equal(strs(m.get("data", "flakyTests")),
				[]string{"[chromium] api/health.spec.ts › " + health}) {
				t.Fatalf("the pass image's insights: %s", m.raw)
			}
			m = h.do("GET", "/api/metrics/"+flakyImage, a, nil)
			if m.get("data", "sampleSize") != 1.0 || !slices.Equal(strs(m.get("data", "flakyTests")),
				[]string{"[chromium] api/health.spec.ts › " + health, "[chromium] ui/home.spec.ts › checkout button opens the cart"}) {
				t.Fatalf("the flaky image's insights: %s", m.raw)
			}

			// Another organization sees none of it.
			other := h.signup("other@example.com", "Other Co")
			m = h.do("GET", "/api/metrics/"+passImage, bearer(other.token), nil)
			if m.get("data", "sampleSize") != 0.0 || len(strs(m.get("data", "flakyTests"))) != 0 {
				t.Fatalf("another organization's insights: %s", m.raw)
			}
			ob := h.browser(t)
			ob.c.Jar.SetCookies(u, []*http.Cookie{{Name: web.SessionCookie, Value: other.token}})
			wantStatus(t, "another organization's overview", ob.get("/overview"), 200, "No finished runs in the last 30 days")
		})
	}
}

var (
	tableRow  = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	tableCell = regexp.MustCompile(`(?s)<td>(.*?)</td>`)
	htmlTag   = regexp.MustCompile(`<[^>]+>`)
)

// tableRows are the text of the cells of each body row of the page's table with that id.
func tableRows(body, id string) [][]string {
	start := strings.Index(body, `id="`+id+`"`)
	if start < 0 {
		return nil
	}
	table := body[start:]
	table = table[:strings.Index(table, "</table>")]
	var rows [][]string
	for _, tr := range tableRow.FindAllStringSubmatch(table, -1) {
		var cells []string
		for _, td := range tableCell.FindAllStringSubmatch(tr[1], -1) {
			text := strings.Join(strings.Fields(htmlTag.ReplaceAllString(td[1], " ")), " ")
			cells = append(cells, strings.ReplaceAll(text, "&gt;", ">"))
		}
		if len(cells) > 0 {
			rows = append(rows, cells)
		}
	}
	return rows
}

// strs is a JSON array of strings.
func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
