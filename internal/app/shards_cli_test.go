//go:build integration

package app_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLISharded: `verdict run --shards 2 --retries 1` prefixes each log line by its shard,
// prints a summary per shard, writes the merged JUnit file and exits by the merged verdict
// (UNSTABLE: 0; a test failing again: 1).
func TestCLISharded(t *testing.T) {
	h := shardHarness(t, "sqlite", "team")
	admin := h.signup("cli-shards@example.com", "CLI Shards")
	key := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey")
	junit := filepath.Join(t.TempDir(), "merged.xml")
	r := verdictRun(t, h.srv.URL, key, nil, "--image", shardedImage, "--shards", "2", "--retries", "1",
		"--env", "FLAKY_TESTS=short-03 test 2", "--junit", junit)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"[shard 1] verdict example suite (mode sharded)", "[shard 2] verdict example suite (mode sharded)",
		"[shard 3] verdict example suite (mode sharded)", "retry of 1 failed test(s)"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.HasPrefix(line, "[shard ") {
			t.Fatalf("a log line without its shard: %q", line)
		}
	}
	for _, want := range []string{"UNSTABLE: 200 tests", "shard 1: FAILED, exit 1", "shard 2: PASSED, exit 0", "retry 1 (container 3): PASSED, exit 0"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests int `xml:"tests,attr"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil || doc.Tests != 200 {
		t.Fatalf("merged JUnit: %d tests, %v", doc.Tests, err)
	}

	r = verdictRun(t, h.srv.URL, key, nil, "--image", shardedImage, "--shards", "2", "--retries", "1",
		"--env", "FAIL_TESTS=long-1 test 1")
	if r.code != 1 || !strings.Contains(r.stderr, "FAILED: 200 tests") {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
}
