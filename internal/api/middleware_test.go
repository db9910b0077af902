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

// The access log and the error log name the route pattern, never the invitation token in the
// path.
func TestAccessLogRedactsInvitationToken(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), observe: noMetrics{}}
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
	if n := strings.Count(out, `route="GET /api/invitations/validate/{token}"`); n != 2 { // 1 access line, 1 error
		t.Fatalf("want 2 lines naming the route, got %d:\n%s", n, out)
	}
	if !strings.Contains(out, `level=INFO msg=request method=GET route="GET /api/invitations/validate/{token}" status=500`) ||
		!strings.Contains(out, `method=GET route=unmatched status=404`) {
		t.Fatalf("no access lines:\n%s", out)
	}
}
