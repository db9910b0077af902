//go:build integration

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// TestBackupRestore: `verdict backup` copies the SQLite database of a server while it serves;
// `verdict restore` puts it in a new data folder, where a new server finds the runs, their
// report links (with the reports folder copied beside it), the members, and not what was written
// after the backup; another organization's admin still gets 404 for the run.
func TestBackupRestore(t *testing.T) {
	dir := t.TempDir()
	secrets := []string{"HOME=" + dir, "JWT_SECRET=" + strings.Repeat("j", 32), "ENCRYPTION_KEY=" + strings.Repeat("ab", 32)}
	dataA, dataB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	v := startVerdictIn(t, dataA, secrets...)
	ada := v.signup("ada@example.com")
	bob := v.call("POST", "/api/auth/signup", "", map[string]any{"email": "bob@example.com", "password": "Str0ng!pass",
		"name": "Bob", "organizationName": "Bob Co"}, 201)["token"].(string)
	task := v.call("POST", "/api/executions", ada, map[string]any{"image": "verdict-examples/pass:latest"}, 201)["taskId"].(string)
	if st := v.waitFinal(ada, task, 2*time.Minute); st != "PASSED" {
		t.Fatalf("run %s ended %s", task, st)
	}

	file := filepath.Join(dir, "verdict-backup.db")
	run := func(env []string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(binary(t), args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	if code, out := run(append(secrets, "VERDICT_DATA_DIR="+dataA), "backup", file); code != 0 || !strings.Contains(out, "backup written") {
		t.Fatalf("backup while serving: %d %s", code, out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the backup file: %v %v", fi, err)
	}
	// Written after the backup: not in it.
	v.call("POST", "/api/auth/signup", "", map[string]any{"email": "late@example.com", "password": "Str0ng!pass",
		"name": "Late", "organizationName": "Late Co"}, 201)

	if code, out := run(append(secrets, "VERDICT_DATA_DIR="+dataB), "restore", filepath.Join(dir, "missing.db")); code != 1 {
		t.Fatalf("restore of a missing file: %d %s", code, out)
	}
	if code, out := run(append(secrets, "VERDICT_DATA_DIR="+dataB), "restore", file); code != 0 || !strings.Contains(out, "restored from") {
		t.Fatalf("restore: %d %s", code, out)
	}
	// The reports live beside the database, in the reports folder: copied as the docs say.
	if out, err := exec.Command("cp", "-a", filepath.Join(dataA, "reports"), filepath.Join(dataB, "reports")).CombinedOutput(); err != nil {
		t.Fatalf("copying the reports folder: %v %s", err, out)
	}

	w := startVerdictIn(t, dataB, secrets...)
	login := func(email string, want int) string {
		r := w.call("POST", "/api/auth/login", "", map[string]any{"email": email, "password": "Str0ng!pass"}, want)
		tok, _ := r["token"].(string)
		return tok
	}
	ada2 := login("ada@example.com", 200)
	login("late@example.com", 401)
	e := w.call("GET", "/api/executions/"+task, ada2, nil, 200)["execution"].(map[string]any)
	if e["status"] != "PASSED" || e["htmlReportUrl"] == nil {
		t.Fatalf("the restored run: %v", e)
	}
	users := w.call("GET", "/api/users", ada2, nil, 200)
	if raw, _ := json.Marshal(users); !strings.Contains(string(raw), "ada@example.com") {
		t.Fatalf("members: %v", users)
	}
	link := w.call("GET", "/api/executions/"+task+"/report-token", ada2, nil, 200)
	u, _ := link["url"].(string)
	if u == "" {
		t.Fatalf("no report link: %v", link)
	}
	if !strings.HasPrefix(u, "http") {
		u = w.base + u
	}
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(strings.ToLower(string(body)), "<html") && !strings.Contains(strings.ToLower(string(body)), "<!doctype") {
		t.Fatalf("the restored report: %d %.200s", res.StatusCode, body)
	}
	bob2 := login("bob@example.com", 200)
	w.call("GET", "/api/auth/me", bob, nil, 200) // the same secrets: a token of before still serves
	w.call("GET", "/api/executions/"+task, bob2, nil, 404)
}

// TestBackupRefusesPostgres: PostgreSQL is backed up with its own tools.
func TestBackupRefusesPostgres(t *testing.T) {
	dbURL := testenv.PostgresDB(t)
	cmd := exec.Command(binary(t), "backup", filepath.Join(t.TempDir(), "x.db"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dbURL, "JWT_SECRET=" + strings.Repeat("j", 32),
		"ENCRYPTION_KEY=" + strings.Repeat("ab", 32), "VERDICT_DATA_DIR=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "pg_dump") {
		t.Fatalf("backup of PostgreSQL: %v %s", err, out)
	}
}
