// Package scmtest runs fake GitHub and GitLab REST APIs for tests: HTTP servers that check each
// request as the real hosts do (the token's header, GitHub's API version, Accept and User-Agent,
// the JSON body's fields and their allowed values, the repository or project) and answer in the
// hosts' own shapes, their error shapes included (GitHub's {message, documentation_url} with
// 401, 403, 404 and 422; GitLab's {message} and {error}). They keep what was set: the statuses
// of each commit and the comments of each request, for the test to read.
package scmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Status is a commit status a fake received.
type Status struct {
	State, TargetURL, Description, Context string
}

// Comment is a comment (GitHub) or note (GitLab) on a request, as the fake holds it.
type Comment struct {
	ID      int64
	Request int64
	Body    string
	Edits   int // how many times it was updated after its creation
}

// Request is a request a fake received: method, path (escaped) and headers.
type Request struct {
	Method, Path string
	Header       http.Header
}

// fake is what both fakes share.
type fake struct {
	srv *httptest.Server
	// Token is the one token the fake accepts.
	Token string
	// Repos are the repositories (GitHub "owner/name", GitLab paths) it has; others are 404.
	Repos []string

	mu       sync.Mutex
	fail     int // the next calls answer 500 while > 0
	requests []Request
	statuses map[string][]Status // by repo + "@" + sha
	comments map[string][]*Comment
	nextID   int64
}

func newFake(t testing.TB, token string, repos []string, h http.Handler) *fake {
	f := &fake{Token: token, Repos: repos, statuses: map[string][]Status{}, comments: map[string][]*Comment{}, nextID: 1000}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, Request{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone()})
		failing := f.fail > 0
		if failing {
			f.fail--
		}
		f.mu.Unlock()
		if failing {
			http.Error(w, "upstream failure", http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// FailNext makes the next n calls answer 500.
func (f *fake) FailNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// Requests are the requests received so far.
func (f *fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// Statuses are the statuses set on sha of repo, in order.
func (f *fake) Statuses(repo, sha string) []Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.statuses[repo+"@"+sha])
}

// Comments are the comments on request of repo, oldest first.
func (f *fake) Comments(repo string, request int64) []Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Comment
	for _, c := range f.comments[repo] {
		if c.Request == request {
			out = append(out, *c)
		}
	}
	return out
}

// AddComment adds a comment on request of repo as someone else would, returning its ID.
func (f *fake) AddComment(repo string, request int64, body string) int64 {
	return f.addComment(repo, request, body).ID
}

// DeleteComments removes every comment on request of repo, as a person might.
func (f *fake) DeleteComments(repo string, request int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.comments[repo] = slices.DeleteFunc(f.comments[repo], func(c *Comment) bool { return c.Request == request })
}

func (f *fake) hasRepo(repo string) bool { return slices.Contains(f.Repos, repo) }

func (f *fake) addStatus(repo, sha string, s Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[repo+"@"+sha] = append(f.statuses[repo+"@"+sha], s)
}

func (f *fake) addComment(repo string, request int64, body string) *Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	c := &Comment{ID: f.nextID, Request: request, Body: body}
	f.comments[repo] = append(f.comments[repo], c)
	return c
}

func (f *fake) editComment(repo string, id int64, request int64, body string) *Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.comments[repo] {
		if c.ID == id && (request == 0 || c.Request == request) {
			c.Body = body
			c.Edits++
			cp := *c
			return &cp
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var sha40 = regexp.MustCompile(`^[0-9a-f]{40}$`)

// readJSON reads a JSON object body into a map of strings; ok false when it is not one.
func readJSON(r *http.Request) (map[string]any, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func str(m map[string]any, k string) (string, bool) {
	v, ok := m[k].(string)
	return v, ok
}

// GitHub is a fake GitHub REST API (api.github.com's paths at its root, as GitHub Enterprise
// Server's /api/v3 would be).
type GitHub struct {
	*fake
	// URL is the API's root, for apiUrl.
	URL string
	// InstallationToken, when set, is an app installation's token: GET /user refuses it with
	// 403, GET /installation/repositories accepts it.
	InstallationToken string
}

const ghDocs = "https://docs.github.com/rest"

func ghError(w http.ResponseWriter, status int, msg string, extra map[string]any) {
	body := map[string]any{"message": msg, "documentation_url": ghDocs, "status": strconv.Itoa(status)}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, status, body)
}

// NewGitHub starts a fake GitHub that accepts token and has repos.
func NewGitHub(t testing.TB, token string, repos ...string) *GitHub {
	g := &GitHub{}
	g.fake = newFake(t, token, repos, http.HandlerFunc(g.serve))
	g.URL = g.srv.URL
	return g
}

var (
	ghStatusPath  = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/statuses/([^/]+)$`)
	ghCommentPost = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/([0-9]+)/comments$`)
	ghCommentEdit = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/comments/([0-9]+)$`)
)

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	// What GitHub checks before anything else: a User-Agent, a supported API version, the token.
	if r.Header.Get("User-Agent") == "" {
		ghError(w, http.StatusForbidden, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header", nil)
		return
	}
	if v := r.Header.Get("X-GitHub-Api-Version"); v != "" && v != "2022-11-28" {
		ghError(w, http.StatusBadRequest, "API version "+v+" is not supported.", nil)
		return
	}
	auth := r.Header.Get("Authorization")
	tok, bearer := strings.CutPrefix(auth, "Bearer ")
	if !bearer || (tok != g.Token && (g.InstallationToken == "" || tok != g.InstallationToken)) {
		ghError(w, http.StatusUnauthorized, "Bad credentials", nil)
		return
	}
	installation := g.InstallationToken != "" && tok == g.InstallationToken
	path := r.URL.EscapedPath()
	switch {
	case r.Method == http.MethodGet && path == "/user":
		if installation {
			ghError(w, http.StatusForbidden, "Resource not accessible by integration", nil)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"login": "verdict-bot", "id": 1, "type": "User"})
	case r.Method == http.MethodGet && path == "/installation/repositories":
		if !installation {
			ghError(w, http.StatusForbidden, "You must authenticate with an installation access token in order to list repositories for an installation.", nil)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"total_count": len(g.Repos), "repositories": []any{}})
	case r.Method == http.MethodPost && ghStatusPath.MatchString(path):
		m := ghStatusPath.FindStringSubmatch(path)
		g.status(w, r, m[1]+"/"+m[2], m[3])
	case r.Method == http.MethodGet && ghCommentPost.MatchString(path):
		m := ghCommentPost.FindStringSubmatch(path)
		n, _ := strconv.ParseInt(m[3], 10, 64)
		g.listComments(w, r, m[1]+"/"+m[2], n)
	case r.Method == http.MethodPost && ghCommentPost.MatchString(path):
		m := ghCommentPost.FindStringSubmatch(path)
		n, _ := strconv.ParseInt(m[3], 10, 64)
		g.comment(w, r, m[1]+"/"+m[2], n, 0)
	case r.Method == http.MethodPatch && ghCommentEdit.MatchString(path):
		m := ghCommentEdit.FindStringSubmatch(path)
		id, _ := strconv.ParseInt(m[3], 10, 64)
		g.comment(w, r, m[1]+"/"+m[2], 0, id)
	default:
		ghError(w, http.StatusNotFound, "Not Found", nil)
	}
}

var ghStates = []string{"error", "failure", "pending", "success"}

// list is the first page of the request's comments, oldest first: per_page of them (default 30,
// at most 100, as GitHub and GitLab page).
func (f *fake) list(r *http.Request, repo string, request int64) []map[string]any {
	per := 30
	if n, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && n > 0 {
		per = min(n, 100)
	}
	out := []map[string]any{}
	for _, c := range f.Comments(repo, request) {
		if len(out) == per {
			break
		}
		out = append(out, map[string]any{"id": c.ID, "body": c.Body})
	}
	return out
}

func (g *GitHub) listComments(w http.ResponseWriter, r *http.Request, repo string, issue int64) {
	if !g.hasRepo(repo) {
		ghError(w, http.StatusNotFound, "Not Found", nil)
		return
	}
	writeJSON(w, http.StatusOK, g.list(r, repo, issue))
}

func validation(w http.ResponseWriter, resource, field, msg string) {
	ghError(w, http.StatusUnprocessableEntity, "Validation Failed", map[string]any{
		"errors": []any{map[string]any{"resource": resource, "code": "custom", "field": field, "message": msg}}})
}

func (g *GitHub) status(w http.ResponseWriter, r *http.Request, repo, sha string) {
	if !g.hasRepo(repo) {
		ghError(w, http.StatusNotFound, "Not Found", nil)
		return
	}
	body, ok := readJSON(r)
	if !ok {
		ghError(w, http.StatusBadRequest, "Problems parsing JSON", nil)
		return
	}
	state, _ := str(body, "state")
	desc, _ := str(body, "description")
	switch {
	case !slices.Contains(ghStates, state):
		validation(w, "Status", "state", "state is not included in the list")
		return
	case len([]rune(desc)) > 140:
		validation(w, "Status", "description", "description is too long (maximum is 140 characters)")
		return
	case !sha40.MatchString(sha):
		ghError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+sha, nil)
		return
	}
	target, _ := str(body, "target_url")
	ctx, _ := str(body, "context")
	if ctx == "" {
		ctx = "default"
	}
	g.addStatus(repo, sha, Status{State: state, TargetURL: target, Description: desc, Context: ctx})
	writeJSON(w, http.StatusCreated, map[string]any{"id": 1, "state": state, "description": desc, "target_url": target, "context": ctx})
}

func (g *GitHub) comment(w http.ResponseWriter, r *http.Request, repo string, issue, id int64) {
	if !g.hasRepo(repo) {
		ghError(w, http.StatusNotFound, "Not Found", nil)
		return
	}
	body, ok := readJSON(r)
	if !ok {
		ghError(w, http.StatusBadRequest, "Problems parsing JSON", nil)
		return
	}
	text, _ := str(body, "body")
	if text == "" {
		validation(w, "IssueComment", "body", "body cannot be blank")
		return
	}
	if len([]rune(text)) > 65536 {
		validation(w, "IssueComment", "body", "body is too long (maximum is 65536 characters)")
		return
	}
	var c *Comment
	status := http.StatusOK
	if id != 0 {
		if c = g.editComment(repo, id, 0, text); c == nil {
			ghError(w, http.StatusNotFound, "Not Found", nil)
			return
		}
	} else {
		c, status = g.addComment(repo, issue, text), http.StatusCreated
	}
	writeJSON(w, status, map[string]any{"id": c.ID, "body": c.Body,
		"html_url": fmt.Sprintf("https://github.com/%s/issues/%d#issuecomment-%d", repo, c.Request, c.ID)})
}

// GitLab is a fake GitLab REST API v4 (its URL is the instance's; the API is under /api/v4).
type GitLab struct {
	*fake
	// URL is the instance's address, for apiUrl.
	URL string
}

// NewGitLab starts a fake GitLab that accepts token and has the projects repos (paths).
func NewGitLab(t testing.TB, token string, repos ...string) *GitLab {
	g := &GitLab{}
	g.fake = newFake(t, token, repos, http.HandlerFunc(g.serve))
	g.URL = g.srv.URL
	return g
}

var glStates = []string{"pending", "running", "success", "failed", "canceled", "skipped"}

func (g *GitLab) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("PRIVATE-TOKEN") != g.Token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
		return
	}
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/v4/")
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
		return
	}
	seg := strings.Split(path, "/")
	if r.Method == http.MethodGet && path == "user" {
		writeJSON(w, http.StatusOK, map[string]any{"id": 1, "username": "verdict-bot"})
		return
	}
	if len(seg) < 3 || seg[0] != "projects" {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
		return
	}
	// The project's ID is its path URL-encoded as one segment (group%2Fname).
	project, err := url.PathUnescape(seg[1])
	if err != nil || !g.hasRepo(project) {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return
	}
	switch {
	case r.Method == http.MethodPost && len(seg) == 4 && seg[2] == "statuses":
		g.status(w, r, project, seg[3])
	case len(seg) >= 5 && seg[2] == "merge_requests" && seg[4] == "notes":
		iid, err := strconv.ParseInt(seg[3], 10, 64)
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
			return
		}
		switch {
		case r.Method == http.MethodGet && len(seg) == 5:
			writeJSON(w, http.StatusOK, g.list(r, project, iid))
		case r.Method == http.MethodPost && len(seg) == 5:
			g.note(w, r, project, iid, 0)
		case r.Method == http.MethodPut && len(seg) == 6:
			id, _ := strconv.ParseInt(seg[5], 10, 64)
			g.note(w, r, project, iid, id)
		default:
			writeJSON(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
		}
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
	}
}

func (g *GitLab) status(w http.ResponseWriter, r *http.Request, project, sha string) {
	body, ok := readJSON(r)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "400 Bad request"})
		return
	}
	state, _ := str(body, "state")
	if !slices.Contains(glStates, state) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "state does not have a valid value"})
		return
	}
	if !sha40.MatchString(sha) {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 References for commit Not Found"})
		return
	}
	name, _ := str(body, "name")
	if name == "" {
		name = "default"
	}
	target, _ := str(body, "target_url")
	desc, _ := str(body, "description")
	g.addStatus(project, sha, Status{State: state, TargetURL: target, Description: desc, Context: name})
	writeJSON(w, http.StatusCreated, map[string]any{"id": 1, "sha": sha, "status": state, "name": name, "target_url": target, "description": desc})
}

func (g *GitLab) note(w http.ResponseWriter, r *http.Request, project string, iid, id int64) {
	body, ok := readJSON(r)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "400 Bad request"})
		return
	}
	text, _ := str(body, "body")
	if text == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "body is missing"})
		return
	}
	var c *Comment
	status := http.StatusOK
	if id != 0 {
		if c = g.editComment(project, id, iid, text); c == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
			return
		}
	} else {
		c, status = g.addComment(project, iid, text), http.StatusCreated
	}
	writeJSON(w, status, map[string]any{"id": c.ID, "body": c.Body, "noteable_iid": c.Request, "system": false})
}
