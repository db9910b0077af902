//go:build integration

package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRunSaysWhichResultsItRead: a run whose suite wrote JUnit XML into two report folders and
// two places of its own says in its notes which format answered and which files its tests came
// from; the files outside the report folders are found and kept as found-results, whether /app
// is small enough to be read whole or holds more (a 20 MiB file first in it, as dependencies
// would be), when the engine names the files the run wrote.
func TestRunSaysWhichResultsItRead(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("results-read@example.com", "Results Read Co")
	a := bearer(admin.token)
	for _, c := range []struct{ name, first string }{
		{"small app", ""},
		{"big app", `open("/app/big.bin", "wb").write(os.urandom(20 << 20)); `},
	} {
		t.Run(c.name, func(t *testing.T) {
			task := h.queue(a, map[string]any{"image": pyImage, "command": `python3 -c 'import os; ` + c.first +
				`os.makedirs("/app/junit"); os.makedirs("/app/results"); ` +
				`open("/app/junit/unit.xml", "w").write("<testsuite name=\"s\"><testcase classname=\"c\" name=\"ok\"/></testsuite>"); ` +
				`open("/app/results/api.xml", "w").write("<testsuite name=\"t\"><testcase classname=\"d\" name=\"ok2\"/></testsuite>"); ` +
				// pytest --junitxml=report.xml in /app, and a reporter's folder Verdict does not know
				`open("/app/report.xml", "w").write("<testsuites><testsuite name=\"p\"><testcase classname=\"e\" name=\"ok3\"/></testsuite></testsuites>"); ` +
				`os.makedirs("/app/ci/out"); open("/app/ci/out/e2e.xml", "w").write("<testsuite name=\"q\"><testcase classname=\"f\" name=\"ok4\"/></testsuite>")'`})
			r := h.waitFor(a, task, 90*time.Second, final)
			if r.str("execution", "status") != "PASSED" || r.get("execution", "summary", "total") != 4.0 {
				t.Fatalf("run: %s", r.raw)
			}
			notes := fmt.Sprint(r.get("execution", "notes"))
			if !strings.Contains(notes, "test results read from JUnit XML: ") || !strings.Contains(notes, "junit/unit.xml") ||
				!strings.Contains(notes, "results/api.xml") || !strings.Contains(notes, "found-results/report.xml") ||
				!strings.Contains(notes, "found-results/ci/out/e2e.xml") {
				t.Fatalf("notes %s do not say which result files were read", notes)
			}
			if folders := fmt.Sprint(r.get("execution", "reportFolders")); !strings.Contains(folders, "found-results") {
				t.Fatalf("report folders %s: the result files found elsewhere are not kept", folders)
			}
		})
	}
}
