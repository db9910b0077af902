package app_test

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBodies sends arbitrary bodies to the routes that decode JSON, as an admin of a real
// organization: whatever the body, the answer is a 2xx or a 4xx with the SPEC's error body,
// never a 5xx. Run longer with: go test -run '^$' -fuzz FuzzRequestBodies ./internal/app
func FuzzRequestBodies(f *testing.F) {
	h := newHarness(f, harnessOpts{dialect: "sqlite"})
	admin := h.signup("fuzz@example.com", "Fuzz Co")
	routes := []struct{ method, path string }{
		{"POST", "/api/auth/signup"}, {"POST", "/api/auth/login"}, {"POST", "/api/auth/api-keys"},
		{"PATCH", "/api/users/" + admin.id + "/role"}, {"PATCH", "/api/users/" + admin.id + "/status"},
		{"PATCH", "/api/organization"}, {"PATCH", "/api/organization/ai-analysis"}, {"PATCH", "/api/organization/features"},
		{"POST", "/api/invitations"}, {"POST", "/api/invitations/accept"},
		{"POST", "/api/projects"}, {"POST", "/api/executions"},
	}
	for _, seed := range []string{
		`{"email":"a@b.co","password":"Str0ng!pass","name":"n","organizationName":"Org"}`,
		`{"role":"admin"}`, `{"status":"suspended"}`, `{"name":"x","aiAnalysisEnabled":true}`, `{"enabled":null}`,
		`{"aiFeatures":{"automationPlanner":1}}`, `{"email":"x@y.z","role":"viewer"}`, `{"token":"` + strings.Repeat("a", 64) + `"}`,
		`{"name":"p","envVars":[{"key":"A","value":"b","secret":true}],"reportFolders":["/app/x"],"targetUrls":{"staging":"http://x"}}`,
		`{"image":"x","envVars":{"A":"b"},"taskId":"t-1","timeoutSeconds":1e3,"folder":"../x"}`,
		`null`, `[]`, `"str"`, `{"a":`, "{\"name\":\"\\u0000\"}", `{"timeoutSeconds":99999999999999999999}`,
	} {
		for i := range routes {
			f.Add(i, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, route int, body []byte) {
		if route < 0 {
			route = -route
		}
		r := routes[route%len(routes)]
		req := httptest.NewRequest(r.method, r.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+admin.token)
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		h.app.API.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", r.method, r.path, body, w.Code, w.Body)
		}
		if w.Code >= 400 && (!strings.Contains(w.Body.String(), `"success":false`) || !strings.Contains(w.Body.String(), `"error":`)) {
			t.Fatalf("%s %s: %d without the error body: %s", r.method, r.path, w.Code, w.Body)
		}
	})
}
