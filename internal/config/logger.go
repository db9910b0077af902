package config

import (
	"io"
	"log/slog"
	"strings"
)

// NewLogger writes to w at level (VERDICT_LOG_LEVEL), as text (slog's key=value) or, with format
// "json" (VERDICT_LOG_FORMAT), as one JSON object a line.
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
