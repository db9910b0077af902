package api

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"verdict/internal/metrics"
)

// BenchmarkOuterMiddleware measures what the outer middleware adds to every request (request
// ID, security headers, the status recorder, the request's two metrics by route pattern, the
// access log line), against the bare mux: "bare" is the mux alone; "quiet" the middleware with
// metrics and the log below info; "text" and "json" with the access line written (to
// io.Discard) in each format. The difference between bare and the others is the cost per
// request.
func BenchmarkOuterMiddleware(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/executions/{taskId}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	m := metrics.New("bench", metrics.Sources{}, nil)
	for _, c := range []struct {
		name    string
		handler http.Handler
	}{
		{"bare", mux},
		{"nometrics", (&Server{log: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})), observe: noMetrics{}}).outer(mux)},
		{"quiet", (&Server{log: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})), observe: m}).outer(mux)},
		{"text", (&Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), observe: m}).outer(mux)},
		{"json", (&Server{log: slog.New(slog.NewJSONHandler(io.Discard, nil)), observe: m}).outer(mux)},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/api/executions/run-123", nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				c.handler.ServeHTTP(w, req)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark measures the
// middleware rather than a recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
