package api

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"verdict/internal/domain"
)

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

func TestLoggedPathRedactsInvitationTokens(t *testing.T) {
	tok := strings.Repeat("ab12", 16)
	for in, want := range map[string]string{
		"/api/invitations/validate/" + tok:            "/api/invitations/validate/redacted",
		"/api/invitations/validate/" + tok + "/extra": "/api/invitations/validate/redacted",
		"//api/invitations//validate/" + tok:          "/api/invitations/validate/redacted",
		"/API/Invitations/validate/" + tok:            "/api/invitations/validate/redacted",
		"/api/invitations/validate/":                  "/api/invitations/validate/",
		"/api/invitations/0123456789abcdef01234567":   "/api/invitations/0123456789abcdef01234567",
		"//reports/o/t/~" + tok + "/index.html":       "//reports/o/t/~redacted/index.html",
	} {
		if got := loggedPath(in); got != want {
			t.Errorf("loggedPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// The debug access log and the error log name the route, never the invitation token in it.
func TestAccessLogRedactsInvitationToken(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/invitations/validate/{token}", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errors.New("database unavailable"), "Invitation check failed")
	})
	h := s.outer(mux)
	tok := domain.RandomHex(32)
	for _, p := range []string{"/api/invitations/validate/" + tok, "/api/invitations/validate/" + tok + "/x"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	out := logs.String()
	if strings.Contains(out, tok) {
		t.Fatalf("the log reveals the invitation token:\n%s", out)
	}
	if n := strings.Count(out, "path=/api/invitations/validate/redacted"); n != 3 { // 2 access lines, 1 error
		t.Fatalf("want 3 redacted paths in the log, got %d:\n%s", n, out)
	}
	if !strings.Contains(out, "level=DEBUG msg=request method=GET path=/api/invitations/validate/redacted status=500") {
		t.Fatalf("no debug access line:\n%s", out)
	}
}
