package gitlab_test

import (
	"net/http"
	"testing"

	"verdict/internal/scm/gitlab"
	"verdict/internal/scm/host"
)

const (
	glPush = `{"object_kind":"push","event_name":"push","ref":"refs/heads/release/1.2",
		"before":"89abcdef0123456789abcdef0123456789abcdef","after":"0123456789abcdef0123456789abcdef01234567",
		"checkout_sha":"0123456789abcdef0123456789abcdef01234567","project":{"id":7,"path_with_namespace":"acme/web/shop"}}`
	glMR = `{"object_kind":"merge_request","event_type":"merge_request","project":{"id":7,"path_with_namespace":"acme/web/shop"},
		"object_attributes":{"iid":5,"action":"update","oldrev":"89abcdef0123456789abcdef0123456789abcdef",
		"source_branch":"feature/x","target_branch":"main","last_commit":{"id":"0123456789abcdef0123456789abcdef01234567"}}}`
)

func glHeaders(token, uuid string) http.Header {
	h := http.Header{}
	if token != "" {
		h.Set("X-Gitlab-Token", token)
	}
	h.Set("X-Gitlab-Event-UUID", uuid)
	return h
}

func TestGitLabHooks(t *testing.T) {
	if !gitlab.Hooks.Verify(glHeaders("tok", "u"), nil, "tok") || gitlab.Hooks.Verify(glHeaders("tok2", "u"), nil, "tok") ||
		gitlab.Hooks.Verify(glHeaders("", "u"), nil, "tok") || gitlab.Hooks.Verify(glHeaders("", "u"), nil, "") {
		t.Fatal("X-Gitlab-Token is not compared with the secret")
	}
	ev, err := gitlab.Hooks.Parse(glHeaders("", "u-1"), []byte(glPush))
	if err != nil || ev.Skip != "" || ev.Branch != "release/1.2" || ev.Repo != "acme/web/shop" || ev.DeliveryID != "u-1" || ev.Request != 0 {
		t.Fatalf("push = %+v %v", ev, err)
	}
	ev, err = gitlab.Hooks.Parse(glHeaders("", "u-2"), []byte(glMR))
	if err != nil || ev.Skip != "" || ev.Branch != "feature/x" || ev.Target != "main" || ev.Request != 5 {
		t.Fatalf("merge_request = %+v %v", ev, err)
	}
	for name, body := range map[string]string{
		"update without commits": `{"object_kind":"merge_request","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":5,"action":"update","source_branch":"x","target_branch":"main","last_commit":{"id":"0123456"}}}`,
		"merged":                 `{"object_kind":"merge_request","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":5,"action":"merge","source_branch":"x","target_branch":"main","last_commit":{"id":"0123456"}}}`,
		"branch deleted":         `{"object_kind":"push","ref":"refs/heads/x","after":"0000000000000000000000000000000000000000","checkout_sha":null,"project":{"path_with_namespace":"a/b"}}`,
		"tag":                    `{"object_kind":"tag_push","ref":"refs/tags/v1"}`,
	} {
		if ev, err := gitlab.Hooks.Parse(glHeaders("", "u"), []byte(body)); err != nil || ev.Skip == "" {
			t.Errorf("%s: %+v %v (want a skip)", name, ev, err)
		}
	}
}

func FuzzGitLabParse(f *testing.F) {
	f.Add(glPush)
	f.Add(glMR)
	f.Fuzz(func(t *testing.T, body string) {
		ev, err := gitlab.Hooks.Parse(glHeaders("", "u"), []byte(body))
		if err != nil || ev.Skip != "" {
			return
		}
		if host.CheckEvent(ev) != nil {
			t.Fatalf("an event that queues a run fails the check: %+v", ev)
		}
	})
}
