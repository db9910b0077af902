//go:build integration

package app_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/domain"
)

// exportArchive reads an export's .tar.gz into file name → content.
func exportArchive(t *testing.T, body io.Reader) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(body)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[hd.Name] = string(b)
	}
}

// TestOrganizationExport: an admin downloads the organization as a .tar.gz of JSON documents:
// members without password hashes, projects without secret values, runs with their results,
// the audit log; a developer is refused; another organization's export holds none of it.
func TestOrganizationExport(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("export-admin@example.com", "Export Org")
		dev := h.join(admin, "export-dev@example.com", "developer")
		other := h.signup("export-other@example.com", "Other Org")
		p := h.do("POST", "/api/projects", bearer(admin.token), map[string]any{"name": "Web", "image": passImage,
			"envVars": []any{map[string]any{"key": "SECRET_TOKEN", "value": "hush-77", "secret": true}}})
		expect(t, p, 201, "")
		ctx := context.Background()
		for i := range 3 {
			e := &domain.Execution{OrganizationID: admin.orgID, TaskID: fmt.Sprintf("run-%d", i), Image: passImage,
				Status: domain.ExecPassed, QueuedAt: h.clock.Now(), Summary: domain.Summary{Total: 1, Passed: 1},
				Tests: []domain.TestResult{{Name: "login works", Suite: "auth", Status: domain.TestPassed, DurationMs: 12}}}
			if err := h.app.Store.Executions().Create(ctx, e); err != nil {
				t.Fatal(err)
			}
		}

		expect(t, h.do("GET", "/api/organization/export", bearer(dev.token), nil), 403, "Forbidden")
		res, body := fetch(t, http.DefaultClient, h.srv.URL, "/api/organization/export", "Authorization", "Bearer "+admin.token)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/gzip" ||
			!strings.Contains(res.Header.Get("Content-Disposition"), "export-org-export.tar.gz") {
			t.Fatalf("export: %d %v", res.StatusCode, res.Header)
		}
		files := exportArchive(t, strings.NewReader(body))
		for _, name := range []string{"organization.json", "members.json", "projects.json", "runs/run-0.json", "runs/run-2.json",
			"test-cases/0001.json", "automation-plans.json", "audit/0001.json"} {
			if _, ok := files[name]; !ok {
				t.Errorf("no %s in the archive (%d files)", name, len(files))
			}
		}
		if !strings.Contains(files["members.json"], "export-dev@example.com") || strings.Contains(strings.ToLower(files["members.json"]), "password") ||
			strings.Contains(files["members.json"], "$2a$") {
			t.Errorf("members.json: %s", files["members.json"])
		}
		all := strings.Join(func() []string {
			var v []string
			for _, b := range files {
				v = append(v, b)
			}
			return v
		}(), "\n")
		if strings.Contains(all, "hush-77") || strings.Contains(all, "$2a$") || strings.Contains(all, "export-other@example.com") {
			t.Errorf("a secret value, a password hash or another organization's data in the archive")
		}
		var run map[string]any
		if err := json.Unmarshal([]byte(files["runs/run-1.json"]), &run); err != nil || !strings.Contains(files["runs/run-1.json"], "login works") {
			t.Errorf("runs/run-1.json: %v %s", err, files["runs/run-1.json"])
		}
		o := exportArchive(t, strings.NewReader(func() string {
			_, b := fetch(t, http.DefaultClient, h.srv.URL, "/api/organization/export", "Authorization", "Bearer "+other.token)
			return b
		}()))
		for name := range o {
			if strings.HasPrefix(name, "runs/") {
				t.Errorf("another organization's export holds %s", name)
			}
		}
	})
}

// TestOrganizationExportMemory: exporting 1,000 runs of about 60 KB of results each (60 MB of
// JSON) to a slow client keeps the server's heap within a bound far below the archive's size.
func TestOrganizationExportMemory(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	admin := h.signup("big@example.com", "Big Org")
	ctx := context.Background()
	tests := make([]domain.TestResult, 200)
	for i := range tests {
		tests[i] = domain.TestResult{Name: fmt.Sprintf("test number %d", i), Suite: "suite", Status: domain.TestFailed,
			DurationMs: int64(i), Error: strings.Repeat(fmt.Sprintf("assertion %d failed; ", i), 12)}
	}
	for i := range 1000 {
		e := &domain.Execution{OrganizationID: admin.orgID, TaskID: fmt.Sprintf("big-%04d", i), Image: passImage,
			Status: domain.ExecFailed, QueuedAt: h.clock.Now(), Summary: domain.Summary{Total: 200, Failed: 200}, Tests: tests}
		if err := h.app.Store.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// The heap in use counts garbage too, which Go lets grow to the size of what is live before
	// collecting it: collected more often here, what is in use is mostly what is held, so that
	// the bound measures what the export keeps rather than when the collector ran (24.5 MB of
	// growth was seen at the default pace).
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	req, _ := http.NewRequest("GET", h.srv.URL+"/api/organization/export", nil)
	req.Header.Set("Authorization", "Bearer "+admin.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	runs, total := 0, int64(0)
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, tr)
		total += n
		if strings.HasPrefix(hd.Name, "runs/") {
			runs++
			if runs%100 == 0 {
				time.Sleep(10 * time.Millisecond) // a slow client: the server must not buffer ahead
			}
		}
	}
	res.Body.Close()
	close(done)
	if runs != 1000 {
		t.Fatalf("%d runs in the archive, want 1000", runs)
	}
	grew := int64(peak.Load()) - int64(base)
	t.Logf("archive: %d MB of JSON; heap in use grew by at most %.1f MB", total>>20, float64(grew)/(1<<20))
	if total < 50<<20 {
		t.Fatalf("the archive holds %d bytes: too little for the bound to mean anything", total)
	}
	if grew > 24<<20 {
		t.Fatalf("heap in use grew by %d MB during the export of %d MB", grew>>20, total>>20)
	}
}
