package redact

import (
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	key := "sk-secret-123"
	got := Clean("bad key sk-secret-123\nagain sk-secret-123 "+strings.Repeat("é", 400), key)
	if strings.Contains(got, key) || strings.Contains(got, "\n") {
		t.Errorf("Clean kept the key or a newline: %q", got)
	}
	if len(got) > MaxBytes+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("Clean did not cut the text: %d bytes", len(got))
	}
	if !strings.HasPrefix(got, "bad key [redacted] again [redacted]") {
		t.Errorf("Clean = %q", got[:40])
	}
	if got := Clean("  short\ttext  ", ""); got != "short text" {
		t.Errorf("Clean without a secret = %q", got)
	}
}
