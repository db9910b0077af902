package api

import "testing"

func TestLoggedPathRedactsReportLinks(t *testing.T) {
	for in, want := range map[string]string{
		"/reports/o/t/~abc.def/playwright-report/index.html": "/reports/o/t/~redacted/playwright-report/index.html",
		"/reports/o/t/~abc":              "/reports/o/t/~redacted",
		"/reports/o/t/junit/results.xml": "/reports/o/t/junit/results.xml",
		"/api/users/~x":                  "/api/users/~x",
	} {
		if got := loggedPath(in); got != want {
			t.Errorf("loggedPath(%q) = %q, want %q", in, got, want)
		}
	}
}
