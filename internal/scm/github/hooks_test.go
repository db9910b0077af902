package github_test

import (
	"net/http"
	"testing"

	"verdict/internal/scm/github"
	"verdict/internal/scm/host"
)

// Payloads as GitHub delivers them (trimmed to the fields Verdict reads and a few beside).
const (
	prOpened = `{"action":"opened","number":42,"pull_request":{"number":42,"state":"open",
		"head":{"ref":"feature/login","sha":"0123456789abcdef0123456789abcdef01234567"},
		"base":{"ref":"main","sha":"89abcdef0123456789abcdef0123456789abcdef"}},
		"repository":{"id":1,"full_name":"acme/shop","private":true},"sender":{"login":"ann"}}`
	pushMain = `{"ref":"refs/heads/main","before":"89abcdef0123456789abcdef0123456789abcdef",
		"after":"0123456789abcdef0123456789abcdef01234567","created":false,"deleted":false,
		"repository":{"id":1,"full_name":"acme/shop"},"pusher":{"name":"ann"}}`
)

func headers(event, delivery, sig string) http.Header {
	h := http.Header{}
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", delivery)
	if sig != "" {
		h.Set("X-Hub-Signature-256", sig)
	}
	return h
}

func TestGitHubHookSignature(t *testing.T) {
	body := []byte(prOpened)
	good := github.Sign(body, "s3cret")
	for name, c := range map[string]struct {
		h    http.Header
		body []byte
		ok   bool
	}{
		"signed":            {headers("pull_request", "d1", good), body, true},
		"no signature":      {headers("pull_request", "d1", ""), body, false},
		"another secret":    {headers("pull_request", "d1", github.Sign(body, "other")), body, false},
		"body changed":      {headers("pull_request", "d1", good), append([]byte(" "), body...), false},
		"sha1 form":         {headers("pull_request", "d1", "sha1="+good[7:]), body, false},
		"upper-case digest": {headers("pull_request", "d1", "sha256="+upper(good[7:])), body, false},
	} {
		if got := github.Hooks.Verify(c.h, c.body, "s3cret"); got != c.ok {
			t.Errorf("%s: Verify = %v, want %v", name, got, c.ok)
		}
	}
	if github.Hooks.Verify(headers("pull_request", "d1", github.Sign(body, "")), body, "") {
		t.Error("an empty secret verifies")
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestGitHubHookParse(t *testing.T) {
	ev, err := github.Hooks.Parse(headers("pull_request", "d-1", ""), []byte(prOpened))
	if err != nil {
		t.Fatal(err)
	}
	want := host.Event{Kind: "pull_request", DeliveryID: "d-1", Repo: "acme/shop", Branch: "feature/login", Target: "main",
		Commit: "0123456789abcdef0123456789abcdef01234567", Request: 42}
	if *ev != want {
		t.Fatalf("pull_request = %+v, want %+v", *ev, want)
	}
	ev, err = github.Hooks.Parse(headers("push", "d-2", ""), []byte(pushMain))
	if err != nil || ev.Skip != "" || ev.Branch != "main" || ev.Target != "main" || ev.Request != 0 || ev.Repo != "acme/shop" {
		t.Fatalf("push = %+v, %v", ev, err)
	}
	for name, c := range map[string]struct{ event, body string }{
		"closed":  {"pull_request", `{"action":"closed","number":1,"pull_request":{"head":{"ref":"x","sha":"0123456"},"base":{"ref":"main"}},"repository":{"full_name":"a/b"}}`},
		"tag":     {"push", `{"ref":"refs/tags/v1","after":"0123456789abcdef0123456789abcdef01234567","repository":{"full_name":"a/b"}}`},
		"deleted": {"push", `{"ref":"refs/heads/x","after":"0000000000000000000000000000000000000000","deleted":true,"repository":{"full_name":"a/b"}}`},
		"issues":  {"issues", `{}`},
	} {
		ev, err := github.Hooks.Parse(headers(c.event, "d", ""), []byte(c.body))
		if err != nil || ev.Skip == "" {
			t.Errorf("%s: %+v, %v (want a skip)", name, ev, err)
		}
	}
	if ev, err := github.Hooks.Parse(headers("ping", "d", ""), []byte(`{"zen":"Keep it logically awesome."}`)); err != nil || ev.Kind != "ping" {
		t.Errorf("ping: %+v %v", ev, err)
	}
	for name, body := range map[string]string{
		"not JSON":       `{"action":`,
		"no commit":      `{"action":"opened","number":1,"pull_request":{"head":{"ref":"x","sha":""},"base":{"ref":"main"}},"repository":{"full_name":"a/b"}}`,
		"no repository":  `{"action":"opened","number":1,"pull_request":{"head":{"ref":"x","sha":"0123456"},"base":{"ref":"main"}}}`,
		"control branch": `{"action":"opened","number":1,"pull_request":{"head":{"ref":"x\ny","sha":"0123456"},"base":{"ref":"main"}},"repository":{"full_name":"a/b"}}`,
	} {
		if _, err := github.Hooks.Parse(headers("pull_request", "d", ""), []byte(body)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzGitHubParse: any body of any event parses or is refused, and what queues a run carries
// values fit for the run's labels.
func FuzzGitHubParse(f *testing.F) {
	f.Add("pull_request", prOpened)
	f.Add("push", pushMain)
	f.Add("ping", `{}`)
	f.Fuzz(func(t *testing.T, event, body string) {
		ev, err := github.Hooks.Parse(headers(event, "d", ""), []byte(body))
		if err != nil || ev.Skip != "" || ev.Kind == "ping" {
			return
		}
		if host.CheckEvent(ev) != nil {
			t.Fatalf("an event that queues a run fails the check: %+v", ev)
		}
	})
}
