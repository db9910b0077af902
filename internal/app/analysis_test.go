//go:build integration

package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// collectStatuses follows a run's execution-updated events on a socket until its final status
// and returns the statuses in order (repeats folded).
func collectStatuses(t *testing.T, events chan sioEvent, task string) []string {
	t.Helper()
	var statuses []string
	for {
		e := nextEvent(t, events, 90*time.Second)
		if e.name != "execution-updated" || e.data["taskId"] != task {
			continue
		}
		st, _ := e.data["status"].(string)
		if len(statuses) == 0 || statuses[len(statuses)-1] != st {
			statuses = append(statuses, st)
		}
		switch st {
		case "PASSED", "FAILED", "UNSTABLE", "ERROR", "CANCELLED":
			return statuses
		}
	}
}

// analysisOf is a run's analysis as the API shows it.
func analysisOf(t *testing.T, r resp) map[string]any {
	t.Helper()
	a, ok := r.get("execution", "analysis").(map[string]any)
	if !ok {
		t.Fatalf("no analysis: %s", r.raw)
	}
	return a
}

// failureSignatures are the signatures of an analysis's failures, by test, with their history.
func failureSignatures(t *testing.T, a map[string]any) map[string][3]string {
	t.Helper()
	out := map[string][3]string{}
	fs, _ := a["failures"].([]any)
	for _, f := range fs {
		m := f.(map[string]any)
		out[m["test"].(string)] = [3]string{m["signature"].(string), jsonNumber(m["occurrences"]), m["firstSeenTaskId"].(string)}
	}
	return out
}

func jsonNumber(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestFailureAnalysisEndToEnd: with analysis on, a failing suite on the real engine passes
// through ANALYZING (seen on Socket.IO) to FAILED with the built-in analysis; the same failure
// again cites the first run; a person's triage decides the next analysis; analyses on request
// arrive as events; other organizations and viewers can neither read nor trigger any of it.
func TestFailureAnalysisEndToEnd(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			a := h.signup("analyst-"+d+"@example.com", "Analysed Co")
			other := h.signup("other-"+d+"@example.com", "Other Co")
			viewer := h.join(a, "viewer-"+d+"@example.com", "viewer")
			expect(t, h.do("PATCH", "/api/organization/ai-analysis", bearer(a.token), map[string]any{"enabled": true}), 200, "")
			events := dialSocket(t, h.srv.URL, a.token)
			if e := nextEvent(t, events, 10*time.Second); e.name != "auth-success" {
				t.Fatalf("auth: %+v", e)
			}

			first := h.queue(bearer(a.token), map[string]any{"image": failImage})
			if got := collectStatuses(t, events, first); !slices.Equal(got, []string{"PENDING", "RUNNING", "ANALYZING", "FAILED"}) {
				t.Fatalf("statuses of a failed run with analysis on: %v", got)
			}
			r := h.do("GET", "/api/executions/"+first, bearer(a.token), nil)
			an := analysisOf(t, r)
			if an["status"] != "completed" || an["provider"] != "builtin" || an["model"] != "builtin" ||
				an["summary"] == "" || an["suggestedFix"] == "" || an["error"] != nil || an["triage"] != nil {
				t.Fatalf("first analysis: %+v", an)
			}
			sigs := failureSignatures(t, an)
			if len(sigs) != 2 {
				t.Fatalf("failures of the first run: %+v", an["failures"])
			}
			for test, s := range sigs {
				if s[1] != "1" || s[2] != first {
					t.Fatalf("first run, %s: occurrences %s, first seen %s", test, s[1], s[2])
				}
			}
			// The list stays light: no analysis there.
			list := h.do("GET", "/api/executions?limit=5", bearer(a.token), nil)
			if strings.Contains(list.raw, `"analysis"`) {
				t.Fatalf("the list carries analyses: %s", list.raw)
			}

			second := h.queue(bearer(a.token), map[string]any{"image": failImage})
			h.waitFor(bearer(a.token), second, 90*time.Second, final)
			an2 := analysisOf(t, h.do("GET", "/api/executions/"+second, bearer(a.token), nil))
			for test, s := range failureSignatures(t, an2) {
				if s[0] != sigs[test][0] || s[1] != "2" || s[2] != first {
					t.Fatalf("second run, %s: %v; want signature %s seen twice since %s", test, s, sigs[test][0], first)
				}
			}

			// A person says it is the environment; the next identical failure follows them.
			tr := h.do("PATCH", "/api/executions/"+second+"/analysis", bearer(a.token), map[string]any{"category": "environment"})
			expect(t, tr, 200, "")
			triage, _ := analysisOf(t, tr)["triage"].(map[string]any)
			if triage["category"] != "environment" || !strings.Contains(triage["by"].(string), "analyst-"+d) {
				t.Fatalf("triage: %+v", triage)
			}
			third := h.queue(bearer(a.token), map[string]any{"image": failImage})
			h.waitFor(bearer(a.token), third, 90*time.Second, final)
			an3 := analysisOf(t, h.do("GET", "/api/executions/"+third, bearer(a.token), nil))
			cited := strings.Contains(jsonNumber(an3), "analyst-"+d) || strings.Contains(jsonNumber(an3), second)
			if an3["category"] != "environment" || !cited {
				t.Fatalf("after the triage: category %v, citing the person or their run %v: %+v", an3["category"], cited, an3)
			}

			// Analysed again on request: 202, then the new analysis as an event.
			expect(t, h.do("POST", "/api/executions/"+first+"/analysis", bearer(a.token), nil), 202, "")
			for {
				e := nextEvent(t, events, 60*time.Second)
				if e.name != "execution-updated" || e.data["taskId"] != first {
					continue
				}
				if got, _ := e.data["analysis"].(map[string]any); got != nil && got["category"] == "environment" {
					break // the triage given since applies now
				}
			}

			// Others: another organization sees none of it; a viewer reads but cannot act.
			for _, c := range []struct{ method, path string }{
				{"GET", "/api/executions/" + first},
				{"POST", "/api/executions/" + first + "/analysis"},
				{"PATCH", "/api/executions/" + first + "/analysis"},
			} {
				var body any
				if c.method == "PATCH" {
					body = map[string]any{"category": "product_bug"}
				}
				expect(t, h.do(c.method, c.path, bearer(other.token), body), 404, "Execution not found")
			}
			if r := h.do("GET", "/api/executions/"+first, bearer(viewer.token), nil); r.status != 200 || r.get("execution", "analysis") == nil {
				t.Fatalf("a viewer reading the analysis: %d %s", r.status, r.raw)
			}
			expect(t, h.do("POST", "/api/executions/"+first+"/analysis", bearer(viewer.token), nil), 403, "Forbidden")
			expect(t, h.do("PATCH", "/api/executions/"+first+"/analysis", bearer(viewer.token), map[string]any{"category": "flaky"}), 403, "Forbidden")
			expect(t, h.do("PATCH", "/api/executions/"+first+"/analysis", bearer(a.token), map[string]any{"category": "cosmic_rays"}), 400, "Validation error")

			// Only failed runs are analysed: a passed one is 400, a running one 409.
			passed := h.queue(bearer(a.token), map[string]any{"image": passImage})
			h.waitFor(bearer(a.token), passed, 90*time.Second, final)
			if r := h.do("GET", "/api/executions/"+passed, bearer(a.token), nil); r.get("execution", "analysis") != nil {
				t.Fatalf("a passed run has an analysis: %s", r.raw)
			}
			expect(t, h.do("POST", "/api/executions/"+passed+"/analysis", bearer(a.token), nil), 400, "Nothing to analyse")
			slow := h.queue(bearer(a.token), map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "50", "INTERVAL_MS": "100"}})
			expect(t, h.do("POST", "/api/executions/"+slow+"/analysis", bearer(a.token), nil), 409, "Execution in progress")
			expect(t, h.do("POST", "/api/executions/"+slow+"/cancel", bearer(a.token), nil), 200, "")

			// With analysis off, a failed run goes straight to FAILED.
			expect(t, h.do("PATCH", "/api/organization/ai-analysis", bearer(a.token), map[string]any{"enabled": false}), 200, "")
			off := h.queue(bearer(a.token), map[string]any{"image": failImage})
			if got := collectStatuses(t, events, off); slices.Contains(got, "ANALYZING") {
				t.Fatalf("statuses with analysis off: %v", got)
			}
			if r := h.do("GET", "/api/executions/"+off, bearer(a.token), nil); r.get("execution", "analysis") != nil {
				t.Fatalf("analysis off, yet: %s", r.raw)
			}
		})
	}
}

// fakeOpenAI speaks OpenAI's chat-completions and models API for the official client: it takes
// one key, answers with answer, or fails with failStatus.
type fakeOpenAI struct {
	mu         sync.Mutex
	key        string
	answer     map[string]any
	failStatus int
	requests   []map[string]any // chat-completion request bodies
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		return
	}
	switch r.URL.Path {
	case "/v1/models":
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-5.4-mini","object":"model","created":1767225600,"owned_by":"system"}]}`)
	case "/v1/chat/completions":
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(400)
			return
		}
		f.requests = append(f.requests, body)
		if f.failStatus != 0 {
			w.WriteHeader(f.failStatus)
			io.WriteString(w, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`)
			return
		}
		content, _ := json.Marshal(f.answer)
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": string(content), "refusal": nil}}},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
		})
	default:
		w.WriteHeader(404)
	}
}

// TestFailureAnalysisWithAModel: an organization brings its own OpenAI key (checked with the
// provider, refused when the provider refuses it, never shown), its failed runs are explained
// by the model with the built-in findings as evidence, and a model failure leaves the built-in
// analysis with the reason.
func TestFailureAnalysisWithAModel(t *testing.T) {
	fake := &fakeOpenAI{key: "sk-good-0123456789", answer: map[string]any{"category": "product_bug",
		"summary": "The login API answers 500.", "rootCause": "The server fails on valid credentials.",
		"suggestedFix": "Look at the login handler's error log.", "confidence": 0.82}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	testenv.DockerHost(t)
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}})
	a := h.signup("byok@example.com", "Model Co")
	dev := h.join(a, "dev@example.com", "developer")
	expect(t, h.do("PATCH", "/api/organization/ai-analysis", bearer(a.token), map[string]any{"enabled": true}), 200, "")

	cfg := h.do("GET", "/api/organization/ai-config", bearer(a.token), nil)
	expect(t, cfg, 200, "")
	if cfg.str("data", "defaultModel") != "builtin" || jsonNumber(cfg.get("data", "models")) != `["builtin"]` {
		t.Fatalf("config without keys: %s", cfg.raw)
	}
	expect(t, h.do("PATCH", "/api/organization/ai-config", bearer(a.token),
		map[string]any{"byok": map[string]any{"provider": "openai", "apiKey": "sk-wrong"}}), 400, "Invalid API key")
	expect(t, h.do("PATCH", "/api/organization/ai-config", bearer(dev.token),
		map[string]any{"byok": map[string]any{"provider": "openai", "apiKey": fake.key}}), 403, "Forbidden")
	expect(t, h.do("PATCH", "/api/organization/ai-config", bearer(a.token),
		map[string]any{"defaultModel": "openai:gpt-5.4-mini"}), 400, "Validation error")
	saved := h.do("PATCH", "/api/organization/ai-config", bearer(a.token),
		map[string]any{"byok": map[string]any{"provider": "openai", "apiKey": fake.key}})
	expect(t, saved, 200, "")
	if saved.str("data", "defaultModel") != "openai:gpt-5.4-mini" || saved.get("data", "byokConfigured", "openai") != true ||
		strings.Contains(saved.raw, fake.key) {
		t.Fatalf("after saving the key: %s", saved.raw)
	}
	if got := h.do("GET", "/api/organization/ai-config", bearer(dev.token), nil); strings.Contains(got.raw, fake.key) ||
		got.str("data", "defaultModel") != "openai:gpt-5.4-mini" {
		t.Fatalf("a member reading the config: %s", got.raw)
	}

	task := h.queue(bearer(a.token), map[string]any{"image": failImage})
	h.waitFor(bearer(a.token), task, 120*time.Second, final)
	an := analysisOf(t, h.do("GET", "/api/executions/"+task, bearer(a.token), nil))
	if an["provider"] != "openai" || an["model"] != "gpt-5.4-mini" || an["category"] != "product_bug" ||
		an["summary"] != "The login API answers 500." || an["confidence"] != 0.82 || an["error"] != nil || len(failureSignatures(t, an)) != 2 {
		t.Fatalf("the model's analysis: %+v", an)
	}
	fake.mu.Lock()
	if len(fake.requests) != 1 {
		t.Fatalf("%d model requests, want 1", len(fake.requests))
	}
	req := fake.requests[0]
	fake.mu.Unlock()
	msgs := req["messages"].([]any)
	system := msgs[0].(map[string]any)["content"].(string)
	user := msgs[1].(map[string]any)["content"].(string)
	if req["model"] != "gpt-5.4-mini" || !strings.Contains(user, "expected status 401, got 500") || strings.Contains(system, "expected status") ||
		!strings.Contains(user, task) {
		t.Fatalf("the model was asked: model %v\nsystem: %s\nuser: %s", req["model"], system, user)
	}

	// The model fails: the built-in analysis stands, saying why.
	fake.mu.Lock()
	fake.failStatus = 500
	fake.mu.Unlock()
	next := h.queue(bearer(a.token), map[string]any{"image": failImage})
	h.waitFor(bearer(a.token), next, 120*time.Second, final)
	an = analysisOf(t, h.do("GET", "/api/executions/"+next, bearer(a.token), nil))
	errText, _ := an["error"].(string)
	if an["provider"] != "builtin" || an["status"] != "completed" || !strings.Contains(errText, "openai:gpt-5.4-mini") ||
		strings.Contains(errText, fake.key) {
		t.Fatalf("after a model failure: %+v", an)
	}

	removed := h.do("PATCH", "/api/organization/ai-config", bearer(a.token), map[string]any{"removeByok": "openai"})
	expect(t, removed, 200, "")
	if removed.get("data", "byokConfigured", "openai") != false || jsonNumber(removed.get("data", "models")) != `["builtin"]` {
		t.Fatalf("after removing the key: %s", removed.raw)
	}
}
