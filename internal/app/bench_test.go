package app_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkMe measures an authenticated GET /api/auth/me through the whole middleware stack
// (rate limit, authentication with the user re-read, handler, JSON), in process, without the
// network: the figure is Verdict's own cost per request.
func BenchmarkMe(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			h := newHarness(b, harnessOpts{dialect: d})
			acc := h.signup("bench@example.com", "Bench Co")
			key := h.do("POST", "/api/auth/api-keys", bearer(acc.token), map[string]any{"name": "bench"}).str("apiKey")
			for _, c := range []struct {
				name, header, value string
			}{{"jwt", "Authorization", "Bearer " + acc.token}, {"apikey", "X-Api-Key", key}} {
				b.Run(c.name, func(b *testing.B) {
					req := httptest.NewRequest("GET", "/api/auth/me", nil)
					req.Header.Set(c.header, c.value)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						w := httptest.NewRecorder()
						h.app.API.ServeHTTP(w, req)
						if w.Code != http.StatusOK {
							b.Fatalf("status %d: %s", w.Code, w.Body)
						}
					}
				})
			}
		})
	}
}
