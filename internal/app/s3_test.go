//go:build integration

package app_test

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"verdict/internal/app"
	"verdict/internal/config"
	"verdict/internal/testenv"
	"verdict/internal/testenv/s3env"
)

// s3Env is the harness's settings for reports in the test bucket b.
func s3Env(b *s3env.S3, dataDir string) map[string]string {
	return map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_S3_BUCKET": b.Bucket, "VERDICT_S3_ENDPOINT": b.Endpoint,
		"VERDICT_S3_ACCESS_KEY": b.AccessKey, "VERDICT_S3_SECRET_KEY": b.SecretKey, "VERDICT_S3_PATH_STYLE": "true"}
}

// s3Run is what one real run of passImage left, as the API shows it.
type s3Run struct {
	task, orgID, htmlURL string
	reportBytes, storage float64
	folders              string
}

// passRun runs passImage on the Docker engine to its end and checks its verdict and results.
func passRun(t *testing.T, h *harness, email string) (s3Run, auth) {
	t.Helper()
	admin := h.signup(email, "Bucket Co")
	a := bearer(admin.token)
	task := h.queue(a, map[string]any{"image": passImage, "taskId": "stored-1"})
	r := h.waitFor(a, task, 90*time.Second, final)
	// The results were parsed from the stored reports.
	if r.str("execution", "status") != "PASSED" || r.get("execution", "summary", "total") != 4.0 ||
		r.get("execution", "summary", "passed") != 4.0 || len(r.get("execution", "tests").([]any)) != 4 {
		t.Fatalf("run: %s", r.raw)
	}
	htmlURL, _ := strings.CutPrefix(r.str("execution", "htmlReportUrl"), publicURL)
	if htmlURL == "" {
		t.Fatalf("no HTML report: %s", r.raw)
	}
	var folders []string
	for _, f := range r.get("execution", "reportFolders").([]any) {
		folders = append(folders, f.(string))
	}
	run := s3Run{task: task, orgID: admin.orgID, htmlURL: htmlURL, reportBytes: r.get("execution", "reportBytes").(float64),
		folders: strings.Join(folders, ",")}
	// The organization's storage is counted just after the run's final write.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		run.storage = h.do("GET", "/api/organization", a, nil).get("organization", "limits", "currentStorageUsedBytes").(float64)
		if run.storage != 0 || time.Now().After(deadline) {
			return run, a
		}
	}
}

// TestS3ReportsEndToEnd: with VERDICT_S3_*, a real run's reports go to the bucket and nowhere
// on disk, open through the report route with its access rules, count as they do on disk, and
// go with the run.
func TestS3ReportsEndToEnd(t *testing.T) {
	testenv.DockerHost(t)
	b := s3env.Bucket(t)
	dataDir := t.TempDir()
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second, env: s3Env(b, dataDir)})
	run, a := passRun(t, h, "bucket@example.com")

	// The objects are in the bucket under <org>/<task>/, and add up to the run's bytes.
	prefix := run.orgID + "/" + run.task + "/"
	var stored int64
	var keys []string
	for o := range b.Client.ListObjects(context.Background(), b.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		stored += o.Size
		keys = append(keys, strings.TrimPrefix(o.Key, prefix))
	}
	if len(keys) == 0 || float64(stored) != run.reportBytes || run.storage != run.reportBytes {
		t.Fatalf("bucket holds %d bytes in %d objects (%v); the run counts %v, the organization %v", stored, len(keys), keys, run.reportBytes, run.storage)
	}
	if all := b.Keys(t, ""); len(all) != len(keys) {
		t.Fatalf("objects outside the run's prefix: %v", all)
	}
	// Nothing of the reports is in the data folder.
	err := filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dataDir, p)
		if rel == "reports" || strings.Contains(rel, run.task) || strings.Contains(rel, "playwright-report") || strings.HasSuffix(rel, ".xml") {
			t.Errorf("report data on disk: %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Served by Verdict's report route, with its headers and rules.
	rep := h.do("GET", run.htmlURL, a, nil)
	if rep.status != 200 || !strings.Contains(rep.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(rep.header.Get("Content-Security-Policy"), "sandbox") || !strings.Contains(rep.raw, "verdict: sandboxed reports") {
		t.Fatalf("report: %d %v %.200s", rep.status, rep.header, rep.raw)
	}
	if r := h.do("GET", strings.TrimSuffix(run.htmlURL, "/"), a, nil); r.status != 200 {
		t.Fatalf("the folder without its slash: %d", r.status) // redirected to it
	}
	for _, p := range []string{run.htmlURL + "missing.html", run.htmlURL + "../../" + run.task + "/x"} {
		if r := h.do("GET", p, a, nil); r.status != 404 {
			t.Fatalf("%s: %d", p, r.status)
		}
	}
	if r := h.do("GET", run.htmlURL, auth{}, nil); r.status == 200 {
		t.Fatal("the report opened without credentials")
	}
	other := h.signup("other@example.com", "Other Co")
	if r := h.do("GET", run.htmlURL, bearer(other.token), nil); r.status != 404 {
		t.Fatalf("another organization: %d", r.status)
	}
	// A range of a file that is not a page comes from the object, seeking.
	for _, k := range keys {
		if strings.HasSuffix(k, ".xml") {
			rg := h.do("GET", "/reports/"+run.orgID+"/"+run.task+"/"+k, a, nil, "Range", "bytes=0-4")
			if rg.status != 206 || rg.raw != "<?xml" {
				t.Fatalf("range of %s: %d %q", k, rg.status, rg.raw)
			}
			break
		}
	}
	ready := h.do("GET", "/readyz", auth{}, nil)
	if ready.status != 200 || ready.get("checks", "reports", "ok") != true {
		t.Fatalf("readyz: %d %s", ready.status, ready.raw)
	}

	// The same run with reports on disk keeps the same folders and counts its bytes the same
	// way. The byte counts themselves may differ by a few bytes: the suite writes its timings
	// into its reports.
	disk := runHarness(t, "sqlite")
	onDisk, _ := passRun(t, disk, "disk@example.com")
	near := func(a, b float64) bool { return a-b < a/100 && b-a < a/100 }
	if onDisk.folders != run.folders || onDisk.reportBytes != onDisk.storage || run.reportBytes != run.storage ||
		!near(onDisk.reportBytes, run.reportBytes) {
		t.Fatalf("on disk %+v, in the bucket %+v", onDisk, run)
	}

	// Deleting the run deletes its objects and gives the storage back.
	expect(t, h.do("DELETE", "/api/executions/"+run.task, a, nil), 200, "")
	if left := b.Keys(t, ""); len(left) != 0 {
		t.Fatalf("objects left after the run was deleted: %v", left)
	}
	if used := h.do("GET", "/api/organization", a, nil).get("organization", "limits", "currentStorageUsedBytes").(float64); used != 0 {
		t.Fatalf("storage after delete: %v", used)
	}
	if r := h.do("GET", run.htmlURL, a, nil); r.status != 404 {
		t.Fatalf("deleted run's report: %d", r.status)
	}
}

// TestS3SettingsAtStart: a bucket that does not exist, or keys the store refuses, stop the
// service at start with a message naming the setting.
func TestS3SettingsAtStart(t *testing.T) {
	b := s3env.Bucket(t)
	for name, change := range map[string]map[string]string{
		"missing bucket": {"VERDICT_S3_BUCKET": b.Bucket + "-missing"},
		"wrong key":      {"VERDICT_S3_SECRET_KEY": "not-the-secret"},
	} {
		t.Run(name, func(t *testing.T) {
			env := s3Env(b, t.TempDir())
			env["JWT_SECRET"], env["ENCRYPTION_KEY"] = "test-secret-test-secret-test-secret-0123", strings.Repeat("ab", 32)
			for k, v := range change {
				env[k] = v
			}
			cfg, err := config.LoadFrom(env)
			if err != nil {
				t.Fatal(err)
			}
			a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler), app.Options{MailConsole: io.Discard, Version: "test"})
			if err == nil {
				a.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "VERDICT_S3_BUCKET") || strings.Contains(err.Error(), "not-the-secret") {
				t.Fatalf("New: %v", err)
			}
		})
	}
}
