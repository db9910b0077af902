package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReadEvents(t *testing.T) {
	stream := ": ping\n\nid: 5\nevent: execution-log\ndata: {\"log\":\"a\\n\"}\n\n" +
		"event: execution-updated\r\ndata: line 1\r\ndata: line 2\r\n\r\n" +
		"id\nevent: x\ndata\n\n" + "event: cut\ndata: never finished"
	var got []event
	if err := readEvents(strings.NewReader(stream), func(e event) bool { got = append(got, e); return true }); err != nil {
		t.Fatal(err)
	}
	want := []event{{ID: "5", Name: "execution-log", Data: `{"log":"a\n"}`}, {ID: "5", Name: "execution-updated", Data: "line 1\nline 2"},
		{ID: "", Name: "x", Data: ""}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	big := "data: " + strings.Repeat("x", maxEventBytes) + "\n\n"
	if err := readEvents(strings.NewReader(big), func(event) bool { return true }); err != errEventTooLarge {
		t.Fatalf("an event over the bound: %v", err)
	}
}

func FuzzReadEvents(f *testing.F) {
	f.Add("id: 1\nevent: a\ndata: b\n\n")
	f.Add(": c\r\ndata\r\n\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		n := 0
		_ = readEvents(strings.NewReader(s), func(e event) bool {
			n++
			if len(e.Data) > len(s) || strings.Contains(e.ID, "\n") || strings.Contains(e.Name, "\n") {
				t.Fatalf("event %q from %q", e, s)
			}
			return true
		})
		if n > strings.Count(s, "\n") {
			t.Fatalf("%d events from %d lines", n, strings.Count(s, "\n"))
		}
	})
}

func TestCILabels(t *testing.T) {
	gh := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_SHA": "abc", "GITHUB_REF_NAME": "main", "GITHUB_RUN_ID": "42",
		"GITHUB_REPOSITORY": "acme/shop"}
	if got := ciLabels(func(k string) string { return gh[k] }); fmt.Sprint(got) != "map[branch:main commit:abc pipeline:42 repo:acme/shop]" {
		t.Fatalf("GitHub: %v", got)
	}
	gl := map[string]string{"GITLAB_CI": "true", "CI_COMMIT_SHA": "def", "CI_COMMIT_REF_NAME": "dev", "CI_PIPELINE_ID": "7",
		"CI_PROJECT_PATH": "acme/web/shop"}
	if got := ciLabels(func(k string) string { return gl[k] }); fmt.Sprint(got) != "map[branch:dev commit:def pipeline:7 repo:acme/web/shop]" {
		t.Fatalf("GitLab: %v", got)
	}
	if got := ciLabels(func(string) string { return "" }); len(got) != 0 {
		t.Fatalf("no CI: %v", got)
	}
}

// fakeServer speaks the API's wire format for one run whose log is lines; its event stream
// breaks off after cutAfter log events the first time it is opened.
type fakeServer struct {
	t        *testing.T
	log      []string
	status   string
	cutAfter int
	view     map[string]any // more members of the run's view

	mu       sync.Mutex
	queued   map[string]any
	opens    []string // each stream's Last-Event-ID
	canceled bool
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-api-key") != "pk_live_good" {
		w.WriteHeader(401)
		fmt.Fprint(w, `{"success":false,"error":"Invalid API key","message":"The API key is not valid"}`)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == "POST" && r.URL.Path == "/api/executions":
		_ = json.NewDecoder(r.Body).Decode(&f.queued)
		w.WriteHeader(201)
		fmt.Fprint(w, `{"success":true,"taskId":"run-1","status":"PENDING"}`)
	case r.URL.Path == "/api/executions/run-1/events":
		f.opens = append(f.opens, r.Header.Get("Last-Event-ID"))
		since, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
		w.Header().Set("Content-Type", "text/event-stream")
		offset, sent := 0, 0
		for _, l := range f.log {
			if offset >= since {
				b, _ := json.Marshal(map[string]any{"taskId": "run-1", "log": l, "offset": offset})
				fmt.Fprintf(w, ": ping\n\nid: %d\nevent: execution-log\ndata: %s\n\n", offset+len(l), b)
				sent++
				if len(f.opens) == 1 && sent == f.cutAfter {
					return // the connection drops
				}
			}
			offset += len(l)
		}
		fmt.Fprintf(w, "event: execution-updated\ndata: {\"taskId\":\"run-1\",\"status\":%q}\n\n", f.status)
	case r.URL.Path == "/api/executions/run-1":
		b, _ := json.Marshal(map[string]any{"success": true, "execution": map[string]any{"taskId": "run-1", "status": f.status,
			"tests":   []testResult{{Name: "t1", Suite: "s", Status: "passed"}, {Name: "t2", Suite: "s", Status: "failed", Error: "no"}},
			"summary": map[string]int{"total": 2, "passed": 1, "failed": 1}}})
		if f.view != nil {
			var v map[string]any
			_ = json.Unmarshal(b, &v)
			for k, x := range f.view {
				v["execution"].(map[string]any)[k] = x
			}
			b, _ = json.Marshal(v)
		}
		w.Write(b)
	case r.URL.Path == "/api/executions/run-1/report-token":
		fmt.Fprint(w, `{"success":true,"url":"http://verdict.test/reports/o/run-1/~tok/index.html"}`)
	case r.URL.Path == "/api/executions/run-1/cancel":
		f.canceled = true
		fmt.Fprint(w, `{"success":true}`)
	default:
		http.NotFound(w, r)
	}
}

func runCLI(t *testing.T, srv string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := Run(context.Background(), append([]string{"--server", srv, "--retry-for", "5s"}, args...), IO{Stdout: &out, Stderr: &errs,
		Getenv: func(k string) string { return env[k] }, Interrupts: make(chan os.Signal)})
	return code, out.String(), errs.String()
}

// A dropped stream resumes where it broke off: the log printed is the log, each line once.
func TestRunFollowsAndResumes(t *testing.T) {
	f := &fakeServer{t: t, log: []string{"one\n", "two\n", "three\n", "four\n"}, status: "FAILED", cutAfter: 2}
	srv := httptest.NewServer(f)
	defer srv.Close()
	junit := filepath.Join(t.TempDir(), "results.xml")
	code, out, errs := runCLI(t, srv.URL, map[string]string{"VERDICT_API_KEY": "pk_live_good", "GITHUB_ACTIONS": "true", "GITHUB_SHA": "abc"},
		"--image", "suite:1", "--env", "A=1", "--label", "team=qa", "--timeout", "90s", "--junit", junit)
	if code != ExitFailed || out != "one\ntwo\nthree\nfour\n" {
		t.Fatalf("exit %d, log %q; stderr:\n%s", code, out, errs)
	}
	if fmt.Sprint(f.opens) != "[ 8]" {
		t.Fatalf("streams opened with Last-Event-ID %q", f.opens)
	}
	if !strings.Contains(errs, "report: http://verdict.test/reports/o/run-1/~tok/index.html") || !strings.Contains(errs, "run run-1 FAILED") {
		t.Fatalf("stderr: %s", errs)
	}
	q, _ := json.Marshal(f.queued)
	if string(q) != `{"envVars":{"A":"1"},"image":"suite:1","labels":{"commit":"abc","team":"qa"},"timeoutSeconds":90}` {
		t.Fatalf("queued %s", q)
	}
	x, err := os.ReadFile(junit)
	if err != nil || !strings.Contains(string(x), `<failure message="no">no</failure>`) {
		t.Fatalf("junit: %v %s", err, x)
	}
}

func TestRunExitCodes(t *testing.T) {
	for status, want := range map[string]int{"PASSED": ExitPassed, "UNSTABLE": ExitPassed, "ERROR": ExitError, "CANCELLED": ExitError} {
		f := &fakeServer{t: t, log: []string{"x\n"}, status: status}
		srv := httptest.NewServer(f)
		if code, _, errs := runCLI(t, srv.URL, map[string]string{"VERDICT_API_KEY": "pk_live_good"}); code != want {
			t.Errorf("%s: exit %d, want %d\n%s", status, code, want, errs)
		}
		if status == "UNSTABLE" {
			if code, _, _ := runCLI(t, srv.URL, map[string]string{"VERDICT_API_KEY": "pk_live_good"}, "--strict"); code != ExitFailed {
				t.Errorf("UNSTABLE --strict: exit %d", code)
			}
		}
		srv.Close()
	}
	f := &fakeServer{t: t, status: "PASSED"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	if code, _, errs := runCLI(t, srv.URL, map[string]string{"VERDICT_API_KEY": "pk_live_bad"}); code != ExitRefused || !strings.Contains(errs, "Invalid API key") {
		t.Fatalf("a bad key: exit %d\n%s", code, errs)
	}
	if code, out, _ := runCLI(t, srv.URL, map[string]string{"VERDICT_API_KEY": "pk_live_good"}, "--no-wait"); code != ExitPassed || out != "run-1\n" {
		t.Fatalf("--no-wait: exit %d, %q", code, out)
	}
	if code, _, errs := runCLI(t, srv.URL, map[string]string{}); code != ExitRefused || !strings.Contains(errs, "no API key") {
		t.Fatalf("no key: exit %d\n%s", code, errs)
	}
	if code, _, _ := runCLI(t, srv.URL, map[string]string{"VERDICT_API_KEY": "k"}, "--env", "novalue"); code != ExitRefused {
		t.Fatalf("a bad --env: exit %d", code)
	}
	// Nothing listens: refused after the retry window.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	start := time.Now()
	if code, _, _ := runCLI(t, dead.URL, map[string]string{"VERDICT_API_KEY": "k"}); code != ExitRefused || time.Since(start) > 10*time.Second {
		t.Fatalf("an unreachable server: exit %d after %s", code, time.Since(start))
	}
}

// hangingServer streams one log line, then holds the stream open until the run is cancelled,
// when it sends the final CANCELLED.
type hangingServer struct {
	fakeServer
	cancelled chan struct{}
}

func (h *hangingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/executions/run-1/events":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 3\nevent: execution-log\ndata: {\"taskId\":\"run-1\",\"log\":\"go\\n\",\"offset\":0}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-h.cancelled:
			fmt.Fprint(w, "event: execution-updated\ndata: {\"taskId\":\"run-1\",\"status\":\"CANCELLED\"}\n\n")
		case <-r.Context().Done():
		}
	case "/api/executions/run-1/cancel":
		close(h.cancelled)
		fmt.Fprint(w, `{"success":true}`)
	default:
		h.fakeServer.ServeHTTP(w, r)
	}
}

// Ctrl-C asks once: yes cancels the run and waits for it to end (exit 2); no leaves it running.
func TestInterruptAsksOnce(t *testing.T) {
	for _, answer := range []bool{true, false} {
		h := &hangingServer{fakeServer: fakeServer{t: t, status: "CANCELLED"}, cancelled: make(chan struct{})}
		srv := httptest.NewServer(h)
		interrupts := make(chan os.Signal, 1)
		asked := 0
		var out, errs bytes.Buffer
		done := make(chan int)
		go func() {
			done <- Run(context.Background(), []string{"--server", srv.URL}, IO{Stdout: &out, Stderr: &errs,
				Getenv: func(k string) string { return map[string]string{"VERDICT_API_KEY": "pk_live_good"}[k] }, Interrupts: interrupts,
				Ask: func(q string) bool { asked++; return answer }})
		}()
		time.Sleep(300 * time.Millisecond) // the command is following the run
		interrupts <- os.Interrupt
		var code int
		select {
		case code = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("answer %v: the command did not end; stderr:\n%s", answer, errs.String())
		}
		srv.Close()
		cancelled := false
		select {
		case <-h.cancelled:
			cancelled = true
		default:
		}
		if code != ExitError || asked != 1 || cancelled != answer || out.String() != "go\n" {
			t.Fatalf("answer %v: exit %d, asked %d, cancelled %v, log %q\n%s", answer, code, asked, cancelled, out.String(), errs.String())
		}
	}
}
