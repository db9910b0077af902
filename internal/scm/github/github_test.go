package github_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"verdict/internal/egress"
	"verdict/internal/scm/github"
	"verdict/internal/scm/host"
	"verdict/internal/scm/scmtest"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func client(t *testing.T) *http.Client {
	g, err := egress.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return g.Client(5 * time.Second)
}

func TestGitHubAPI(t *testing.T) {
	ctx := context.Background()
	fake := scmtest.NewGitHub(t, "ghp_good", "acme/shop")
	fake.InstallationToken = "ghs_installation"
	h := github.New(fake.URL, client(t), 5*time.Second)

	if err := h.Check(ctx, "ghp_good"); err != nil {
		t.Fatalf("a user's token: %v", err)
	}
	if err := h.Check(ctx, "ghs_installation"); err != nil {
		t.Fatalf("an app installation's token: %v", err)
	}
	err := h.Check(ctx, "ghp_wrong")
	if !errors.Is(err, host.ErrRefused) || strings.Contains(err.Error(), "ghp_wrong") {
		t.Fatalf("a wrong token: %v (want ErrRefused, without the token)", err)
	}
	if !strings.Contains(err.Error(), "Bad credentials") {
		t.Fatalf("the error does not carry GitHub's message: %v", err)
	}

	st := host.Status{State: host.Failure, TargetURL: "https://verdict.example.com/runs/r1",
		Description: strings.Repeat("é", 200), Context: "verdict/shop"}
	if err := h.SetStatus(ctx, "ghp_good", "acme/shop", sha, st); err != nil {
		t.Fatal(err)
	}
	got := fake.Statuses("acme/shop", sha)
	if len(got) != 1 || got[0].State != "failure" || got[0].Context != "verdict/shop" || got[0].TargetURL != st.TargetURL ||
		len([]rune(got[0].Description)) != 140 {
		t.Fatalf("statuses = %+v", got)
	}
	req := fake.Requests()[len(fake.Requests())-1]
	for k, want := range map[string]string{"Authorization": "Bearer ghp_good", "Accept": "application/vnd.github+json",
		"X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json"} {
		if req.Header.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, req.Header.Get(k), want)
		}
	}
	if req.Header.Get("User-Agent") == "" {
		t.Error("no User-Agent")
	}
	// Cancelled is GitHub's error state.
	if err := h.SetStatus(ctx, "ghp_good", "acme/shop", sha, host.Status{State: host.Cancelled, Context: "verdict/shop"}); err != nil ||
		fake.Statuses("acme/shop", sha)[1].State != "error" {
		t.Fatalf("cancelled: %v %+v", err, fake.Statuses("acme/shop", sha))
	}

	err = h.SetStatus(ctx, "ghp_good", "acme/other", sha, st)
	if !errors.Is(err, host.ErrNotFound) || !host.Permanent(err) {
		t.Fatalf("a repository GitHub does not have: %v", err)
	}
	err = h.SetStatus(ctx, "ghp_good", "acme/shop", "nothex", st)
	if !errors.Is(err, host.ErrInvalid) || !strings.Contains(err.Error(), "No commit found") {
		t.Fatalf("a commit GitHub does not have: %v", err)
	}
	// A state GitHub does not know is its 422 with the field's error.
	raw := host.Client{Base: fake.URL, HTTP: client(t), UserAgent: "t", Auth: func(h http.Header, tok string) { h.Set("Authorization", "Bearer "+tok) }}
	err = raw.Do(ctx, "ghp_good", http.MethodPost, "/repos/acme/shop/statuses/"+sha, "op", map[string]string{"state": "running"}, nil)
	var ce *host.CallError
	if !errors.As(err, &ce) || ce.Status != 422 || !errors.Is(err, host.ErrInvalid) || !strings.Contains(ce.Message, "state is not included in the list") {
		t.Fatalf("a bad state: %v", err)
	}

	// One comment, updated in place; found by its marker when its ID is not known; a new one
	// once someone deleted it.
	const marker = "<!-- verdict:project:p1 -->"
	fake.AddComment("acme/shop", 7, "LGTM, someone else's")
	id, err := h.Comment(ctx, "ghp_good", "acme/shop", 7, "", marker, marker+"\nfirst")
	if err != nil || id == "" {
		t.Fatal(id, err)
	}
	id2, err := h.Comment(ctx, "ghp_good", "acme/shop", 7, id, marker, marker+"\nsecond")
	if err != nil || id2 != id {
		t.Fatalf("update: %q %v (want %q)", id2, err, id)
	}
	id3, err := h.Comment(ctx, "ghp_good", "acme/shop", 7, "", marker, marker+"\nthird")
	if err != nil || id3 != id {
		t.Fatalf("by its marker: %q %v (want %q)", id3, err, id)
	}
	cs := fake.Comments("acme/shop", 7)
	if len(cs) != 2 || cs[0].Body != "LGTM, someone else's" || cs[1].Body != marker+"\nthird" || cs[1].Edits != 2 {
		t.Fatalf("comments = %+v", cs)
	}
	fake.DeleteComments("acme/shop", 7)
	id4, err := h.Comment(ctx, "ghp_good", "acme/shop", 7, id, marker, marker+"\nfourth")
	if err != nil || id4 == id || len(fake.Comments("acme/shop", 7)) != 1 {
		t.Fatalf("after a delete: %q %v %+v", id4, err, fake.Comments("acme/shop", 7))
	}

	fake.FailNext(1)
	if err := h.SetStatus(ctx, "ghp_good", "acme/shop", sha, st); !errors.Is(err, host.ErrUpstream) || host.Permanent(err) {
		t.Fatalf("a 500: %v (want a retryable ErrUpstream)", err)
	}
}

func TestGitHubRefusesInternalAddresses(t *testing.T) {
	fake := scmtest.NewGitHub(t, "ghp_good", "acme/shop")
	strict, _ := egress.New(nil)
	h := github.New(fake.URL, strict.Client(5*time.Second), 5*time.Second)
	err := h.Check(context.Background(), "ghp_good")
	if !errors.Is(err, host.ErrUnreachable) || !strings.Contains(err.Error(), "refused") || len(fake.Requests()) != 0 {
		t.Fatalf("a call to 127.0.0.1 without the operator's leave: %v (requests %d)", err, len(fake.Requests()))
	}
}

func TestGitHubRefusalNamesTheGuard(t *testing.T) {
	strict, _ := egress.New(nil)
	h := github.New("http://127.0.0.1:1", strict.Client(time.Second), time.Second)
	if err := h.Check(context.Background(), "x"); !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("err = %v, want egress.ErrRefused", err)
	}
}
