package config

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestLoggerFormats: VERDICT_LOG_FORMAT=json writes one JSON object a line, text key=value.
func TestLoggerFormats(t *testing.T) {
	var b bytes.Buffer
	NewLogger(&b, "info", "json").Info("request", "route", "GET /healthz", "status", 200)
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil || m["msg"] != "request" || m["route"] != "GET /healthz" || m["level"] != "INFO" {
		t.Fatalf("json log %q: %v", b.String(), err)
	}
	b.Reset()
	NewLogger(&b, "warn", "text").Info("dropped")
	NewLogger(&b, "warn", "text").Warn("kept", "k", "v")
	if s := b.String(); strings.Contains(s, "dropped") || !strings.Contains(s, "level=WARN msg=kept k=v") {
		t.Fatalf("text log %q", s)
	}
}
