package gitlab_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"verdict/internal/egress"
	"verdict/internal/scm/gitlab"
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

func TestGitLabAPI(t *testing.T) {
	ctx := context.Background()
	fake := scmtest.NewGitLab(t, "glpat-good", "acme/web/shop")
	// The instance's address, with or without /api/v4.
	for _, base := range []string{fake.URL, fake.URL + "/api/v4/"} {
		if err := gitlab.New(base, client(t), 5*time.Second).Check(ctx, "glpat-good"); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
	}
	h := gitlab.New(fake.URL, client(t), 5*time.Second)
	err := h.Check(ctx, "glpat-wrong")
	if !errors.Is(err, host.ErrRefused) || strings.Contains(err.Error(), "glpat-wrong") || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Fatalf("a wrong token: %v", err)
	}
	for _, c := range []struct {
		state host.State
		want  string
	}{{host.Pending, "pending"}, {host.Success, "success"}, {host.Failure, "failed"}, {host.Error, "failed"}, {host.Cancelled, "canceled"}} {
		if err := h.SetStatus(ctx, "glpat-good", "acme/web/shop", sha, host.Status{State: c.state, Context: "verdict/shop",
			TargetURL: "https://v.example.com/runs/r1", Description: "d"}); err != nil {
			t.Fatal(err)
		}
		got := fake.Statuses("acme/web/shop", sha)
		if last := got[len(got)-1]; last.State != c.want || last.Context != "verdict/shop" || last.TargetURL != "https://v.example.com/runs/r1" {
			t.Fatalf("%s: %+v", c.state, last)
		}
	}
	req := fake.Requests()[len(fake.Requests())-1]
	if req.Header.Get("PRIVATE-TOKEN") != "glpat-good" || req.Path != "/api/v4/projects/acme%2Fweb%2Fshop/statuses/"+sha {
		t.Fatalf("request = %+v", req)
	}
	if err := h.SetStatus(ctx, "glpat-good", "acme/other", sha, host.Status{State: host.Pending}); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("a project GitLab does not have: %v", err)
	}
	raw := host.Client{Base: fake.URL + "/api/v4", HTTP: client(t), UserAgent: "t", Auth: func(h http.Header, tok string) { h.Set("PRIVATE-TOKEN", tok) }}
	err = raw.Do(ctx, "glpat-good", http.MethodPost, "/projects/acme%2Fweb%2Fshop/statuses/"+sha, "op", map[string]string{"state": "failure"}, nil)
	if !errors.Is(err, host.ErrInvalid) || !strings.Contains(err.Error(), "state does not have a valid value") {
		t.Fatalf("a state GitLab does not know: %v", err)
	}

	const marker = "<!-- verdict:project:p1 -->"
	id, err := h.Comment(ctx, "glpat-good", "acme/web/shop", 3, "", marker, marker+"first")
	if err != nil {
		t.Fatal(err)
	}
	if id2, err := h.Comment(ctx, "glpat-good", "acme/web/shop", 3, id, marker, marker+"second"); err != nil || id2 != id {
		t.Fatalf("update: %q %v", id2, err)
	}
	if id3, err := h.Comment(ctx, "glpat-good", "acme/web/shop", 3, "", marker, marker+"third"); err != nil || id3 != id {
		t.Fatalf("by its marker: %q %v", id3, err)
	}
	if cs := fake.Comments("acme/web/shop", 3); len(cs) != 1 || cs[0].Body != marker+"third" || cs[0].Edits != 2 {
		t.Fatalf("notes = %+v", cs)
	}
}
