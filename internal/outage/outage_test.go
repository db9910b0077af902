package outage

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
)

// TestRefusal: only a dependency's absence is refused (503, naming it, retryAfter 5), each is
// counted, and the log has one line per LogEvery with the number refused since the last.
func TestRefusal(t *testing.T) {
	var logged bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	counted := map[string]int{}
	r := &Reporter{Log: slog.New(slog.NewTextHandler(&logged, nil)), Clock: func() time.Time { return now },
		Count: func(dep string) { counted[dep]++ }}

	if _, ok := r.Refusal(errors.New("a bug")); ok {
		t.Fatal("a plain error was taken for an outage")
	}
	if _, ok := r.Refusal(nil); ok {
		t.Fatal("nil was taken for an outage")
	}
	away := fmt.Errorf("reading: %w", domain.DependencyUnavailable("database", errors.New("connection refused")))
	for i := 0; i < 3; i++ {
		de, ok := r.Refusal(away)
		if !ok || de.Kind != domain.KindUnavailable || de.Code != "Service unavailable" || !strings.Contains(de.Message, "database") || de.Fields["retryAfter"] != 5 {
			t.Fatalf("refusal: %v %+v", ok, de)
		}
		now = now.Add(time.Second)
	}
	if counted["database"] != 3 || strings.Count(logged.String(), "\n") != 1 || !strings.Contains(logged.String(), "refused=1") {
		t.Fatalf("after 3 within %s: counted %v, log %q", LogEvery, counted, logged.String())
	}
	now = now.Add(LogEvery)
	r.Refusal(away)
	if lines := strings.Split(strings.TrimSpace(logged.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "refused=3") ||
		!strings.Contains(lines[1], "connection refused") {
		t.Fatalf("log: %q", logged.String())
	}
}
