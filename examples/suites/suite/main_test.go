package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// appDir makes a fake /app with the image's test folders.
func appDir(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"api", "ui"} {
		if err := os.MkdirAll(filepath.Join(root, "tests", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func runMode(t *testing.T, m, root string, args []string, envs map[string]string) (int, string) {
	t.Helper()
	old := mode
	mode = m
	t.Cleanup(func() { mode = old })
	var out, errOut bytes.Buffer
	code := run(root, args, func(k string) string { return envs[k] }, &out, &errOut)
	return code, out.String() + errOut.String()
}

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		mode            string
		code            int
		tests, failures int
		pwStatuses      map[string]int
	}{
		{"pass", 0, 4, 0, map[string]int{"expected": 4}},
		{"fail", 1, 4, 2, map[string]int{"expected": 2, "unexpected": 2}},
		{"flaky", 0, 4, 0, map[string]int{"expected": 3, "flaky": 1}},
		{"slow", 0, 4, 0, map[string]int{"expected": 4}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			root := appDir(t)
			code, out := runMode(t, tc.mode, root, []string{"all"}, map[string]string{
				"BASE_URL": "http://target:8080", "TASK_ID": "t1", "SECRET_TOKEN": "s3cret", "LINES": "3", "INTERVAL_MS": "1",
			})
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; output:\n%s", code, tc.code, out)
			}
			for _, want := range []string{"BASE_URL=http://target:8080", "TASK_ID=t1", "SECRET_TOKEN=s3cret"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if tc.mode == "slow" && !strings.Contains(out, "line 3 of 3") {
				t.Errorf("slow mode printed no numbered lines:\n%s", out)
			}

			var junit junitSuites
			readXML(t, filepath.Join(root, "junit", "results.xml"), &junit)
			if junit.Tests != tc.tests || junit.Failures != tc.failures {
				t.Errorf("junit: %d tests %d failures, want %d and %d", junit.Tests, junit.Failures, tc.tests, tc.failures)
			}

			var pw pwReport
			readJSON(t, filepath.Join(root, "test-results", "results.json"), &pw)
			got := map[string]int{}
			for _, s := range pw.Suites {
				for _, sp := range s.Specs {
					for _, pt := range sp.Tests {
						got[pt.Status]++
						if pt.Status == "flaky" && (len(pt.Results) != 2 || pt.Results[0].Status != "failed" || pt.Results[1].Status != "passed" || pt.Results[1].Retry != 1) {
							t.Errorf("flaky test results: %+v", pt.Results)
						}
					}
				}
			}
			for k, v := range tc.pwStatuses {
				if got[k] != v {
					t.Errorf("playwright statuses %v, want %v", got, tc.pwStatuses)
				}
			}

			files, _ := filepath.Glob(filepath.Join(root, "allure-results", "*-result.json"))
			wantFiles := tc.tests
			if tc.mode == "flaky" {
				wantFiles++ // the retried test has a result per attempt
			}
			if len(files) != wantFiles {
				t.Errorf("%d allure results, want %d", len(files), wantFiles)
			}
			failed := 0
			for _, f := range files {
				var r allureResult
				readJSON(t, f, &r)
				if r.Status == "failed" {
					failed++
					if r.StatusDetails.Message == "" {
						t.Errorf("failed allure result without a message: %s", f)
					}
				}
			}
			if tc.mode == "fail" && failed != 2 {
				t.Errorf("%d failed allure results, want 2", failed)
			}
			if _, err := os.Stat(filepath.Join(root, "playwright-report", "index.html")); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestFolderSelection(t *testing.T) {
	root := appDir(t)
	code, out := runMode(t, "pass", root, []string{"ui"}, nil)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var junit junitSuites
	readXML(t, filepath.Join(root, "junit", "results.xml"), &junit)
	if junit.Tests != 2 {
		t.Errorf("folder ui ran %d tests, want 2", junit.Tests)
	}
	for _, s := range junit.Suites {
		if !strings.HasPrefix(s.Name, "ui/") {
			t.Errorf("folder ui ran suite %s", s.Name)
		}
	}

	if code, out := runMode(t, "pass", appDir(t), []string{"nope"}, nil); code != 2 || !strings.Contains(out, "no test folder") {
		t.Errorf("unknown folder: exit %d, output %q", code, out)
	}
	if code, _ := runMode(t, "pass", appDir(t), []string{"../../etc"}, nil); code != 2 {
		t.Errorf("folder outside tests: exit %d, want 2", code)
	}
}

func readXML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// FILL_MB writes that many MiB to FILL_PATH before the tests, for disk limit tests.
func TestFill(t *testing.T) {
	root := appDir(t)
	path := filepath.Join(t.TempDir(), "fill")
	code, out := runMode(t, "pass", root, []string{"api"}, map[string]string{"FILL_MB": "3", "FILL_PATH": path})
	if code != 0 || !strings.Contains(out, "wrote 3 MiB to "+path) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 3<<20 {
		t.Fatalf("the file: %v, %v", st, err)
	}
}

// FAIL_TESTS fails the named tests in any mode; the others keep the mode's outcome.
func TestFailTests(t *testing.T) {
	root := appDir(t)
	code, out := runMode(t, "pass", root, nil, map[string]string{"FAIL_TESTS": "health endpoint returns 200, nope"})
	if code != 1 || !strings.Contains(out, "health endpoint returns 200: FAILED: failed on request") ||
		!strings.Contains(out, "4 tests, 1 failed") {
		t.Errorf("exit %d, output %q", code, out)
	}
}
