package trackertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Jira is a fake of a Jira Cloud site's REST API v3 (https://<site>.atlassian.net/rest/api/3):
// basic authentication with an account's e-mail and API token, GET /myself, GET
// /project/{key} with its issue types, and POST /issue, whose description must be a valid
// Atlassian Document Format document. It answers in Jira's shapes: 401 with a plain-text body
// for a bad token (as Jira Cloud does), {"errorMessages": [...], "errors": {...}} for the rest.
type Jira struct {
	t   testing.TB
	srv *httptest.Server
	// URL is the site's address (the organization's baseUrl).
	URL string
	// Email and Token are the one account the site accepts.
	Email, Token string
	// Project and IssueTypes are the one project the account sees and its issue types.
	Project    string
	IssueTypes []string
	// Delay is how long a Slow answer takes (default 2 s).
	Delay time.Duration

	mu     sync.Mutex
	mode   Mode
	calls  []string // "GET /rest/api/3/myself", ...
	issues []JiraIssue
}

// JiraIssue is an issue the fake created.
type JiraIssue struct {
	ID, Key, Project, IssueType, Summary string
	Description                          map[string]any // the ADF document
}

// NewJira starts a fake Jira site accepting email and token, with project QA of issue types
// Task, Bug and Story (and the sub-task type Subtask).
func NewJira(t testing.TB, email, token string) *Jira {
	j := &Jira{t: t, Email: email, Token: token, Project: "QA", IssueTypes: []string{"Task", "Bug", "Story"},
		Delay: 2 * time.Second, mode: OK}
	j.srv = httptest.NewServer(http.HandlerFunc(j.handle))
	j.URL = j.srv.URL
	t.Cleanup(j.srv.Close)
	return j
}

// Set makes the fake answer every later call in mode m (OK, BadKey, Fail500, Slow, Malformed).
func (j *Jira) Set(m Mode) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mode = m
}

// Calls returns the calls received so far, as "METHOD path".
func (j *Jira) Calls() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.calls...)
}

// Issues returns the issues created so far.
func (j *Jira) Issues() []JiraIssue {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]JiraIssue(nil), j.issues...)
}

func jiraError(w http.ResponseWriter, status int, messages []string, fields map[string]string) {
	if messages == nil {
		messages = []string{}
	}
	if fields == nil {
		fields = map[string]string{}
	}
	writeJSON(w, status, map[string]any{"errorMessages": messages, "errors": fields})
}

func (j *Jira) handle(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	j.calls = append(j.calls, r.Method+" "+r.URL.Path)
	mode := j.mode
	j.mu.Unlock()
	mode, ok := failing(w, r, mode, j.Delay)
	if !ok {
		return
	}
	if a := r.Header.Get("Accept"); !strings.Contains(a, "application/json") {
		j.t.Errorf("fake Jira: Accept %q, want application/json", a)
	}
	user, pass, ok := r.BasicAuth()
	if !ok || user != j.Email || pass != j.Token || mode == BadKey {
		// Jira Cloud answers a bad API token with 401 and a plain-text body.
		w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "Client must be authenticated to access this resource.")
		return
	}
	if mode == Malformed {
		writeJSON(w, http.StatusOK, []any{"not", "an", "object"})
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/rest/api/3")
	switch {
	case r.Method == http.MethodGet && path == "/myself":
		writeJSON(w, http.StatusOK, map[string]any{"accountId": "5b10a2844c20165700ede21g", "emailAddress": j.Email,
			"displayName": "QA bot", "active": true, "accountType": "atlassian"})
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/project/"):
		key := strings.TrimPrefix(path, "/project/")
		if key != j.Project {
			jiraError(w, http.StatusNotFound, []string{fmt.Sprintf("No project could be found with key '%s'.", key)}, nil)
			return
		}
		types := []any{}
		for i, n := range j.IssueTypes {
			types = append(types, map[string]any{"id": fmt.Sprint(10001 + i), "name": n, "subtask": false})
		}
		types = append(types, map[string]any{"id": "10009", "name": "Subtask", "subtask": true})
		writeJSON(w, http.StatusOK, map[string]any{"id": "10000", "key": j.Project, "name": "Quality", "issueTypes": types})
	case r.Method == http.MethodPost && path == "/issue":
		j.createIssue(w, r)
	default:
		j.t.Errorf("fake Jira: unexpected %s %s", r.Method, r.URL.Path)
		jiraError(w, http.StatusNotFound, []string{"Not found"}, nil)
	}
}

func (j *Jira) createIssue(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		j.t.Errorf("fake Jira: Content-Type %q, want application/json", ct)
		jiraError(w, http.StatusUnsupportedMediaType, []string{"Unsupported media type"}, nil)
		return
	}
	var body struct {
		Fields struct {
			Project     map[string]string `json:"project"`
			IssueType   map[string]string `json:"issuetype"`
			Summary     string            `json:"summary"`
			Description map[string]any    `json:"description"`
		} `json:"fields"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		jiraError(w, http.StatusBadRequest, []string{"Unexpected character in the request body"}, nil)
		return
	}
	f := body.Fields
	errs := map[string]string{}
	if f.Project["key"] != j.Project {
		errs["project"] = "Specify a valid project ID or key"
	}
	typeOK := false
	for _, n := range j.IssueTypes {
		typeOK = typeOK || strings.EqualFold(n, f.IssueType["name"])
	}
	if !typeOK {
		errs["issuetype"] = "Specify a valid issue type"
	}
	if strings.TrimSpace(f.Summary) == "" {
		errs["summary"] = "You must specify a summary of the issue."
	} else if len([]rune(f.Summary)) > 255 || strings.ContainsAny(f.Summary, "\r\n") {
		errs["summary"] = "Summary must be less than 255 characters and on one line."
	}
	if f.Description != nil {
		if problem := CheckADF(f.Description); problem != "" {
			errs["description"] = "Operation value must be an Atlassian Document (" + problem + ")"
		}
	}
	if len(errs) > 0 {
		jiraError(w, http.StatusBadRequest, nil, errs)
		return
	}
	j.mu.Lock()
	n := len(j.issues) + 1
	issue := JiraIssue{ID: fmt.Sprint(10040 + n), Key: fmt.Sprintf("%s-%d", j.Project, n), Project: j.Project,
		IssueType: f.IssueType["name"], Summary: f.Summary, Description: f.Description}
	j.issues = append(j.issues, issue)
	j.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"id": issue.ID, "key": issue.Key,
		"self": j.URL + "/rest/api/3/issue/" + issue.ID})
}

// adfNodes are the node types an issue's description may hold (the ones Verdict writes, and
// their kin), with whether each holds content (and text, whether it must be text).
var adfNodes = map[string]bool{"paragraph": true, "heading": true, "bulletList": true, "orderedList": true,
	"listItem": true, "codeBlock": true, "blockquote": true, "rule": false, "hardBreak": false, "text": false}

// CheckADF is what is wrong with an Atlassian Document Format document, "" when nothing: a
// version-1 doc whose nodes are known, whose text nodes are not empty, whose headings have a
// level from 1 to 6 and whose marks are known.
func CheckADF(doc map[string]any) string {
	if doc["type"] != "doc" || doc["version"] != float64(1) {
		return "not a version 1 doc"
	}
	content, _ := doc["content"].([]any)
	for _, c := range content {
		if p := checkNode(c); p != "" {
			return p
		}
	}
	return ""
}

func checkNode(v any) string {
	n, ok := v.(map[string]any)
	if !ok {
		return "a node that is not an object"
	}
	typ, _ := n["type"].(string)
	hasContent, known := adfNodes[typ]
	switch {
	case !known:
		return "unknown node " + typ
	case typ == "text":
		if s, _ := n["text"].(string); s == "" {
			return "an empty text node"
		}
		marks, _ := n["marks"].([]any)
		for _, m := range marks {
			mm, _ := m.(map[string]any)
			switch mm["type"] {
			case "strong", "em", "code":
			case "link":
				attrs, _ := mm["attrs"].(map[string]any)
				if href, _ := attrs["href"].(string); href == "" {
					return "a link without href"
				}
			default:
				return fmt.Sprintf("unknown mark %v", mm["type"])
			}
		}
		return ""
	case typ == "heading":
		attrs, _ := n["attrs"].(map[string]any)
		if l, _ := attrs["level"].(float64); l < 1 || l > 6 {
			return "a heading without a level from 1 to 6"
		}
	}
	if !hasContent {
		if _, has := n["content"]; has {
			return typ + " with content"
		}
		return ""
	}
	content, _ := n["content"].([]any)
	if typ != "paragraph" && len(content) == 0 {
		return typ + " without content"
	}
	for _, c := range content {
		if p := checkNode(c); p != "" {
			return p
		}
	}
	return ""
}

// BasicAuth is the Authorization header of email and token, as a client sends it.
func BasicAuth(email, token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(email+":"+token))
}
