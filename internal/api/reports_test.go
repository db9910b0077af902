package api

import "testing"

// Host headers name the reports origin in any case and with or without the default port; no
// other host or port does.
func TestReportsHost(t *testing.T) {
	for _, c := range []struct {
		url, host string
		same      bool
	}{
		{"https://reports.example.com", "reports.example.com", true},
		{"https://reports.example.com", "Reports.Example.COM", true},
		{"https://reports.example.com", "reports.example.com:443", true},
		{"https://reports.example.com:443", "reports.example.com", true},
		{"http://reports.example.com", "reports.example.com:80", true},
		{"http://127.0.0.1:8081", "127.0.0.1:8081", true},
		{"http://[::1]:8081", "[::1]:8081", true},
		{"http://127.0.0.1:8081", "127.0.0.1:8080", false},
		{"http://127.0.0.1:8081", "127.0.0.1", false},
		{"https://reports.example.com", "reports.example.com:8443", false},
		{"https://reports.example.com", "verdict.example.com", false},
		{"https://reports.example.com", "reports.example.com.evil.test", false},
		{"https://reports.example.com", "", false},
	} {
		if got := hostKey(c.host) == reportsHost(c.url); got != c.same {
			t.Errorf("%s, Host %q: same origin %v, want %v", c.url, c.host, got, c.same)
		}
	}
}
