//go:build integration

package app_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/testenv"
)

// TestRunResultsMaskSecretsAndDataIsPrivate: a suite that writes a project secret into its
// JUnit results (suite, test name, failure message, a file name the parser reports) has it
// masked in the stored execution as in its log; and the data folder, database and reports are
// readable by the service alone, even when the data folder was created open to others.
func TestRunResultsMaskSecretsAndDataIsPrivate(t *testing.T) {
	testenv.DockerHost(t)
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"VERDICT_DATA_DIR": dir}})
	admin := h.signup("mask@example.com", "Mask Co")
	a := bearer(admin.token)
	const secret = "s3cr3t-Tok3n-9876"
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Masked", "image": pyImage,
		"envVars": []any{map[string]any{"key": "API_TOKEN", "value": secret, "secret": true}}})
	expect(t, p, 201, "")
	// @ stands for a quote and $ for the secret (the command is one single-quoted word).
	task := h.queue(a, map[string]any{"projectId": p.str("project", "id"), "command": `python3 -c 'import os; ` +
		`s = os.environ["API_TOKEN"]; os.makedirs("/app/junit"); print("token", s); ` +
		`x = "<testsuite name=@suite $@><testcase classname=@c@ name=@logs in with $@>` +
		`<failure message=@token $ was refused@>got $ back</failure></testcase></testsuite>"; ` +
		`open("/app/junit/results.xml", "w").write(x.replace("@", chr(39)).replace("$", s)); ` +
		`open("/app/junit/bad-" + s + ".xml", "w").write("<testsuite><broken")'`})
	r := h.waitFor(a, task, 60*time.Second, final)
	if strings.Contains(r.raw, secret) {
		t.Fatalf("the execution shows the secret: %s", r.raw)
	}
	tests, _ := r.get("execution", "tests").([]any)
	if len(tests) != 1 {
		t.Fatalf("tests: %s", r.raw)
	}
	tc := tests[0].(map[string]any)
	if tc["name"] != "logs in with ********" || tc["suite"] != "suite ********" || !strings.Contains(fmt.Sprint(tc["error"]), "token ******** was refused") {
		t.Fatalf("test result: %v", tc)
	}
	if notes := fmt.Sprint(r.get("execution", "notes")); !strings.Contains(notes, "bad-********.xml") {
		t.Fatalf("notes: %s", notes)
	}
	if l := h.do("GET", "/api/executions/"+task+"/logs", a, nil).str("logs"); strings.Contains(l, secret) || !strings.Contains(l, "token ********") {
		t.Fatalf("log: %q", l)
	}
	if m := h.do("GET", "/api/executions?limit=10", a, nil); strings.Contains(m.raw, secret) {
		t.Fatalf("the list shows the secret: %s", m.raw)
	}

	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v: readable by others", p, perm)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"", "verdict.db", "reports"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if n < 6 {
		t.Fatalf("walked %d entries of the data folder", n)
	}
}

// TestRunReportFolderWithTooManyFiles: a report folder refused for its file count is left out
// with a note that says so (with the limit); the run's other reports are kept, and no storage
// alert is raised, since storage was not the reason.
func TestRunReportFolderWithTooManyFiles(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("files@example.com", "Files Co")
	a := bearer(admin.token)
	task := h.queue(a, map[string]any{"image": pyImage, "command": `python3 -c 'import os; ` +
		`os.makedirs("/app/junit"); os.makedirs("/app/test-results"); ` +
		`open("/app/junit/results.xml", "w").write("<testsuite name=\"s\"><testcase classname=\"c\" name=\"ok\"/></testsuite>"); ` +
		fmt.Sprintf(`[open("/app/test-results/f%%d" %% i, "w").close() for i in range(%d)]'`, report.MaxFiles+1)})
	r := h.waitFor(a, task, 90*time.Second, final)
	notes := fmt.Sprint(r.get("execution", "notes"))
	if r.str("execution", "status") != "PASSED" || r.get("execution", "summary", "total") != 1.0 ||
		fmt.Sprint(r.get("execution", "reportFolders")) != "[junit verdict-results]" { // and the results report of its results
		t.Fatalf("run: %s", r.raw)
	}
	want := fmt.Sprintf("report folder test-results was not kept: it holds more than %d files and folders", report.MaxFiles)
	if !strings.Contains(notes, want) || strings.Contains(notes, "storage") {
		t.Fatalf("notes %s, want one saying %q", notes, want)
	}
	// No storage alert was claimed this period: each threshold is still free to claim.
	org := h.org(admin.orgID)
	now := time.Now().UTC()
	start, _ := domain.BillingPeriod(org, now)
	for _, threshold := range domain.AlertThresholds {
		fresh, err := h.app.Store.UsageAlerts().Claim(t.Context(), admin.orgID, billing.ResourceStorage, threshold, start, now)
		if err != nil {
			t.Fatal(err)
		}
		if !fresh {
			t.Fatalf("a %d %% storage alert was raised for a refusal by file count", threshold)
		}
	}
	if used := org.StorageUsedBytes; used <= 0 || used > 1<<20 {
		t.Fatalf("storage used %d: the kept junit report only", used)
	}
}
