// Package gitlab is GitLab (gitlab.com, or a self-managed instance) as a source-control host:
// its REST API v4 for checking a token (GET /user), commit statuses and merge-request notes,
// and its webhooks (push, merge_request) carrying the hook's secret in X-Gitlab-Token.
package gitlab

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"verdict/internal/scm/host"
)

// Public is gitlab.com.
const Public = "https://gitlab.com"

// New is GitLab at base, the instance's address ("" for Public; a trailing /api/v4 is allowed),
// reached through client.
func New(base string, client *http.Client, timeout time.Duration) host.Host {
	if base == "" {
		base = Public
	}
	base = strings.TrimSuffix(strings.TrimRight(base, "/"), "/api/v4")
	return &gl{c: host.Client{Base: base + "/api/v4", HTTP: client, Timeout: timeout, UserAgent: "Verdict",
		Auth: func(h http.Header, token string) { h.Set("PRIVATE-TOKEN", token) }}}
}

type gl struct{ c host.Client }

// project is a project's ID in the API: its path, URL-encoded as one segment.
func project(repo string) string { return "/projects/" + url.PathEscape(repo) }

func (g *gl) Check(ctx context.Context, token string) error {
	return g.c.Do(ctx, token, http.MethodGet, "/user", "GET /user", nil, nil)
}

// states are GitLab's commit status states.
var states = map[host.State]string{host.Pending: "pending", host.Success: "success", host.Failure: "failed",
	host.Error: "failed", host.Cancelled: "canceled"}

func (g *gl) SetStatus(ctx context.Context, token, repo, sha string, st host.Status) error {
	body := map[string]string{"state": states[st.State], "name": st.Context, "target_url": st.TargetURL,
		"description": host.Clip(st.Description, host.MaxDescription)}
	return g.c.Do(ctx, token, http.MethodPost, project(repo)+"/statuses/"+url.PathEscape(sha),
		"POST /projects/:id/statuses/:sha", body, nil)
}

func (g *gl) Comment(ctx context.Context, token, repo string, request int64, commentID, marker, body string) (string, error) {
	var out struct {
		ID int64 `json:"id"`
	}
	notes := project(repo) + "/merge_requests/" + strconv.FormatInt(request, 10) + "/notes"
	in := map[string]string{"body": body}
	if commentID == "" && marker != "" {
		var list []struct {
			ID   int64  `json:"id"`
			Body string `json:"body"`
		}
		if err := g.c.Do(ctx, token, http.MethodGet, notes+"?sort=asc&order_by=created_at&per_page=100",
			"GET /projects/:id/merge_requests/:iid/notes", nil, &list); err != nil {
			return "", err
		}
		for _, n := range list {
			if strings.Contains(n.Body, marker) {
				commentID = strconv.FormatInt(n.ID, 10)
				break
			}
		}
	}
	if commentID != "" {
		err := g.c.Do(ctx, token, http.MethodPut, notes+"/"+url.PathEscape(commentID),
			"PUT /projects/:id/merge_requests/:iid/notes/:note_id", in, &out)
		if err == nil {
			return strconv.FormatInt(out.ID, 10), nil
		}
		if !errors.Is(err, host.ErrNotFound) {
			return "", err
		}
	}
	if err := g.c.Do(ctx, token, http.MethodPost, notes, "POST /projects/:id/merge_requests/:iid/notes", in, &out); err != nil {
		return "", err
	}
	if out.ID == 0 {
		return "", &host.CallError{Kind: host.ErrUpstream, Op: "POST /projects/:id/merge_requests/:iid/notes",
			Message: "the answer has no note id"}
	}
	return strconv.FormatInt(out.ID, 10), nil
}

// Hooks reads GitLab's webhook deliveries.
var Hooks host.Hooks = hooks{}

type hooks struct{}

func (hooks) Events() []string { return []string{"push", "merge_request"} }

// Verify compares X-Gitlab-Token with the hook's secret in constant time.
func (hooks) Verify(h http.Header, _ []byte, secret string) bool {
	got := h.Get("X-Gitlab-Token")
	return secret != "" && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1
}

// requestActions are the merge_request actions that may queue a run; "update" only with new
// commits (oldrev set).
var requestActions = map[string]bool{"open": true, "reopen": true, "update": true}

type projectInfo struct {
	Path string `json:"path_with_namespace"`
}

func (hooks) Parse(h http.Header, body []byte) (*host.Event, error) {
	var kind struct {
		ObjectKind string `json:"object_kind"`
	}
	if err := json.Unmarshal(body, &kind); err != nil {
		return nil, fmt.Errorf("the event is not the JSON expected: %w", err)
	}
	ev := &host.Event{Kind: kind.ObjectKind, DeliveryID: h.Get("X-Gitlab-Event-UUID")}
	switch ev.Kind {
	case "push":
		var p struct {
			Ref         string      `json:"ref"`
			After       string      `json:"after"`
			CheckoutSHA *string     `json:"checkout_sha"`
			Project     projectInfo `json:"project"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("the push event is not the JSON expected: %w", err)
		}
		ev.Repo = p.Project.Path
		ev.SetPush(p.Ref, p.After, p.CheckoutSHA == nil)
	case "merge_request":
		var p struct {
			Attrs struct {
				IID          int64   `json:"iid"`
				Action       string  `json:"action"`
				SourceBranch string  `json:"source_branch"`
				TargetBranch string  `json:"target_branch"`
				OldRev       *string `json:"oldrev"`
				LastCommit   struct {
					ID string `json:"id"`
				} `json:"last_commit"`
			} `json:"object_attributes"`
			Project projectInfo `json:"project"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("the merge_request event is not the JSON expected: %w", err)
		}
		a := p.Attrs
		ev.Repo, ev.Commit, ev.Request = p.Project.Path, a.LastCommit.ID, a.IID
		ev.Branch, ev.Target = a.SourceBranch, a.TargetBranch
		switch {
		case !requestActions[a.Action]:
			ev.Skip = "merge_request action " + strconv.Quote(a.Action) + " brings no new commit"
		case a.Action == "update" && (a.OldRev == nil || *a.OldRev == ""):
			ev.Skip = "the merge request was updated without new commits"
		}
	default:
		ev.Skip = "GitLab event " + strconv.Quote(ev.Kind) + " does not queue runs"
		return ev, nil
	}
	if ev.Skip == "" {
		if err := host.CheckEvent(ev); err != nil {
			return nil, err
		}
	}
	return ev, nil
}
