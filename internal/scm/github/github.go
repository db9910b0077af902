// Package github is GitHub (github.com, or GitHub Enterprise Server at its /api/v3 address) as a
// source-control host: its REST API for checking a token (GET /user, or GET
// /installation/repositories for an app installation's token), commit statuses and issue
// comments, and its webhooks (push, pull_request) signed with X-Hub-Signature-256.
package github

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
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

// PublicAPI is github.com's API.
const PublicAPI = "https://api.github.com"

// APIVersion is the REST API version asked for.
const APIVersion = "2022-11-28"

// New is GitHub at base (the API's root; "" for PublicAPI), reached through client.
func New(base string, client *http.Client, timeout time.Duration) host.Host {
	if base == "" {
		base = PublicAPI
	}
	return &gh{c: host.Client{Base: base, HTTP: client, Timeout: timeout, UserAgent: "Verdict",
		Auth:    func(h http.Header, token string) { h.Set("Authorization", "Bearer "+token) },
		Headers: map[string]string{"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": APIVersion}}}
}

type gh struct{ c host.Client }

// path is a repository's path in the API: each of owner and name escaped.
func repoPath(repo string) (string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", &host.CallError{Kind: host.ErrInvalid, Op: "repository", Message: "a GitHub repository is owner/name"}
	}
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name), nil
}

// Check accepts a user's token (GET /user) or an app installation's, which GET /user refuses
// with 403 and GET /installation/repositories accepts.
func (g *gh) Check(ctx context.Context, token string) error {
	err := g.c.Do(ctx, token, http.MethodGet, "/user", "GET /user", nil, nil)
	if !errors.Is(err, host.ErrForbidden) {
		return err
	}
	err = g.c.Do(ctx, token, http.MethodGet, "/installation/repositories?per_page=1", "GET /installation/repositories", nil, nil)
	if errors.Is(err, host.ErrForbidden) {
		return &host.CallError{Kind: host.ErrRefused, Status: http.StatusForbidden, Op: "GET /installation/repositories",
			Message: "the token is neither a user's nor an app installation's"}
	}
	return err
}

// states are GitHub's commit status states.
var states = map[host.State]string{host.Pending: "pending", host.Success: "success", host.Failure: "failure",
	host.Error: "error", host.Cancelled: "error"}

func (g *gh) SetStatus(ctx context.Context, token, repo, sha string, st host.Status) error {
	p, err := repoPath(repo)
	if err != nil {
		return err
	}
	body := map[string]string{"state": states[st.State], "target_url": st.TargetURL,
		"description": host.Clip(st.Description, host.MaxDescription), "context": st.Context}
	return g.c.Do(ctx, token, http.MethodPost, p+"/statuses/"+url.PathEscape(sha),
		"POST /repos/{owner}/{repo}/statuses/{sha}", body, nil)
}

func (g *gh) Comment(ctx context.Context, token, repo string, request int64, commentID, marker, body string) (string, error) {
	p, err := repoPath(repo)
	if err != nil {
		return "", err
	}
	var out struct {
		ID int64 `json:"id"`
	}
	in := map[string]string{"body": body}
	if commentID == "" && marker != "" {
		if commentID, err = g.find(ctx, token, p, request, marker); err != nil {
			return "", err
		}
	}
	if commentID != "" {
		err := g.c.Do(ctx, token, http.MethodPatch, p+"/issues/comments/"+url.PathEscape(commentID),
			"PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", in, &out)
		if err == nil {
			return strconv.FormatInt(out.ID, 10), nil
		}
		if !errors.Is(err, host.ErrNotFound) {
			return "", err
		}
		// deleted by someone: a new one
	}
	err = g.c.Do(ctx, token, http.MethodPost, p+"/issues/"+strconv.FormatInt(request, 10)+"/comments",
		"POST /repos/{owner}/{repo}/issues/{issue_number}/comments", in, &out)
	if err != nil {
		return "", err
	}
	if out.ID == 0 {
		return "", &host.CallError{Kind: host.ErrUpstream, Op: "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
			Message: "the answer has no comment id"}
	}
	return strconv.FormatInt(out.ID, 10), nil
}

// find is the ID of the first of the request's first 100 comments whose body holds marker, ""
// for none.
func (g *gh) find(ctx context.Context, token, p string, request int64, marker string) (string, error) {
	var comments []struct {
		ID   int64  `json:"id"`
		Body string `json:"body"`
	}
	err := g.c.Do(ctx, token, http.MethodGet, p+"/issues/"+strconv.FormatInt(request, 10)+"/comments?per_page=100",
		"GET /repos/{owner}/{repo}/issues/{issue_number}/comments", nil, &comments)
	if err != nil {
		return "", err
	}
	for _, c := range comments {
		if strings.Contains(c.Body, marker) {
			return strconv.FormatInt(c.ID, 10), nil
		}
	}
	return "", nil
}

// Hooks reads GitHub's webhook deliveries.
var Hooks host.Hooks = hooks{}

type hooks struct{}

func (hooks) Events() []string { return []string{"push", "pull_request"} }

// Sign is the X-Hub-Signature-256 value of body under secret.
func Sign(body []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify compares X-Hub-Signature-256 with the HMAC-SHA256 of the raw body, in constant time.
func (hooks) Verify(h http.Header, body []byte, secret string) bool {
	got := h.Get("X-Hub-Signature-256")
	if secret == "" || !strings.HasPrefix(got, "sha256=") {
		return false
	}
	return hmac.Equal([]byte(got), []byte(Sign(body, secret)))
}

// requestActions are the pull_request actions that queue a run: new commits to test.
var requestActions = map[string]bool{"opened": true, "synchronize": true, "reopened": true}

type repository struct {
	FullName string `json:"full_name"`
}

func (hooks) Parse(h http.Header, body []byte) (*host.Event, error) {
	ev := &host.Event{Kind: h.Get("X-GitHub-Event"), DeliveryID: h.Get("X-GitHub-Delivery")}
	switch ev.Kind {
	case "ping":
		return ev, nil
	case "push":
		var p struct {
			Ref        string     `json:"ref"`
			After      string     `json:"after"`
			Deleted    bool       `json:"deleted"`
			Repository repository `json:"repository"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("the push event is not the JSON expected: %w", err)
		}
		ev.Repo = p.Repository.FullName
		ev.SetPush(p.Ref, p.After, p.Deleted)
	case "pull_request":
		var p struct {
			Action      string `json:"action"`
			Number      int64  `json:"number"`
			PullRequest struct {
				Number int64 `json:"number"`
				Head   struct {
					Ref string `json:"ref"`
					SHA string `json:"sha"`
				} `json:"head"`
				Base struct {
					Ref string `json:"ref"`
				} `json:"base"`
			} `json:"pull_request"`
			Repository repository `json:"repository"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("the pull_request event is not the JSON expected: %w", err)
		}
		ev.Repo, ev.Commit = p.Repository.FullName, p.PullRequest.Head.SHA
		ev.Branch, ev.Target = p.PullRequest.Head.Ref, p.PullRequest.Base.Ref
		ev.Request = p.Number
		if ev.Request == 0 {
			ev.Request = p.PullRequest.Number
		}
		if !requestActions[p.Action] {
			ev.Skip = "pull_request action " + strconv.Quote(p.Action) + " brings no new commit"
		}
	default:
		ev.Skip = "GitHub event " + strconv.Quote(ev.Kind) + " does not queue runs"
		return ev, nil
	}
	if ev.Skip == "" {
		if err := host.CheckEvent(ev); err != nil {
			return nil, err
		}
	}
	return ev, nil
}
