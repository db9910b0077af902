// Package trackertest runs fake Linear and Monday.com GraphQL APIs for tests: HTTP servers that
// check each request as the real services would see it (method, headers, the operation and its
// variables) and answer in the services' own response shapes, their error shapes included. A
// test picks how the next calls are answered with Set: normally, a refused key, a failure, a
// slow answer or a malformed one.
package trackertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mode is how a fake answers.
type Mode string

const (
	OK        Mode = "ok"        // as the service does
	BadKey    Mode = "bad-key"   // every key refused, in the service's shape
	Fail500   Mode = "fail-500"  // HTTP 500 with a body that is not JSON
	Slow      Mode = "slow"      // answers only after Delay (the caller should give up first)
	Malformed Mode = "malformed" // HTTP 200 with an answer that is not the operation's
	// GraphQLError answers the operation with a GraphQL error about its input, as the service
	// does for an unknown team or board.
	GraphQLError Mode = "graphql-error"
	// LegacyError (Monday.com only) answers an error in the format of its API before 2025-01:
	// {"error_message", "error_code", "status_code"}.
	LegacyError Mode = "legacy-error"
	// NoUpdate (Monday.com only) creates items but fails to post updates.
	NoUpdate Mode = "no-update"
)

// Request is a GraphQL request a fake received.
type Request struct {
	OperationName string
	Query         string
	Variables     map[string]any
	Header        http.Header
}

// server is what both fakes share: the mode, the requests, the HTTP server.
type server struct {
	t   testing.TB
	srv *httptest.Server
	// URL is the GraphQL endpoint.
	URL string
	// Key is the one API key the fake accepts.
	Key string
	// Delay is how long a Slow answer takes (default 2 s).
	Delay time.Duration

	mu       sync.Mutex
	mode     Mode
	requests []Request
}

// Set makes the fake answer every later call in mode m.
func (s *server) Set(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

// Requests returns the requests received so far.
func (s *server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Mode is the mode calls are answered in.
func (s *server) Mode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

func newServer(t testing.TB, key string, handle func(w http.ResponseWriter, r *http.Request, req *Request, mode Mode)) *server {
	s := &server{t: t, Key: key, Delay: 2 * time.Second, mode: OK}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, ok := s.read(w, r)
		if !ok {
			return
		}
		mode, ok := failing(w, r, s.Mode(), s.Delay)
		if !ok {
			return
		}
		if mode == Malformed {
			writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"viewer": "nobody", "me": 7,
				"issueCreate": "yes", "create_item": []any{1}, "create_update": "x"}})
			return
		}
		handle(w, r, req, mode)
	}))
	s.URL = s.srv.URL + "/graphql"
	t.Cleanup(s.srv.Close)
	return s
}

// failing answers the modes every fake shares: Slow waits Delay (or until the caller leaves)
// and then answers as OK, Fail500 answers an HTML 500. It returns the mode to answer in, and
// false when the request is answered already.
func failing(w http.ResponseWriter, r *http.Request, mode Mode, delay time.Duration) (Mode, bool) {
	switch mode {
	case Slow:
		select {
		case <-time.After(delay):
			return OK, true
		case <-r.Context().Done():
			return mode, false
		}
	case Fail500:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "<html><body>upstream exploded</body></html>")
		return mode, false
	}
	return mode, true
}

// read checks the request as a GraphQL service over HTTP would, records it and decodes it.
func (s *server) read(w http.ResponseWriter, r *http.Request) (*Request, bool) {
	bad := func(format string, args ...any) (*Request, bool) {
		s.t.Errorf("fake tracker: "+format, args...)
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []any{map[string]any{"message": fmt.Sprintf(format, args...)}}})
		return nil, false
	}
	if r.Method != http.MethodPost || r.URL.Path != "/graphql" {
		return bad("%s %s, want POST /graphql", r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return bad("Content-Type %q, want application/json", ct)
	}
	var body struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return bad("body is not a GraphQL request: %v", err)
	}
	io.Copy(io.Discard, r.Body) // read to the end, so the server notices a caller who leaves
	req := &Request{OperationName: body.OperationName, Query: body.Query, Variables: body.Variables, Header: r.Header.Clone()}
	s.mu.Lock()
	s.requests = append(s.requests, *req)
	s.mu.Unlock()
	if !strings.Contains(body.Query, body.OperationName) || body.OperationName == "" {
		return bad("operationName %q does not name the query's operation", body.OperationName)
	}
	return req, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// operation names the root field a query selects, among fields; "" for none.
func operation(query string, fields ...string) string {
	for _, f := range fields {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(f) + `\s*[({]`).MatchString(query) {
			return f
		}
	}
	return ""
}

func str(v map[string]any, key string) (string, bool) {
	s, ok := v[key].(string)
	return s, ok
}

// ---- Linear ----

// Linear is a fake of Linear's GraphQL API (https://api.linear.app/graphql): header
// `Authorization: <key>` (no Bearer), the viewer query and the issueCreate mutation.
type Linear struct {
	*server

	issues []LinearIssue
}

// LinearIssue is an issue the fake created.
type LinearIssue struct {
	ID, Identifier, TeamID, Title, Description, URL string
}

// Team is the team ID the fake Linear knows.
const Team = "5d1c9d7a-2b3c-4d5e-8f90-a1b2c3d4e5f6"

// NewLinear starts a fake Linear that accepts key.
func NewLinear(t testing.TB, key string) *Linear {
	l := &Linear{}
	l.server = newServer(t, key, l.handle)
	return l
}

// Issues returns the issues created so far.
func (l *Linear) Issues() []LinearIssue {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LinearIssue(nil), l.issues...)
}

func linearError(w http.ResponseWriter, status int, message, code, typ, userMessage string) {
	ext := map[string]any{"code": code, "type": typ, "userError": true}
	if userMessage != "" {
		ext["userPresentableMessage"] = userMessage
	}
	writeJSON(w, status, map[string]any{"errors": []any{map[string]any{"message": message, "extensions": ext}}, "data": nil})
}

func (l *Linear) handle(w http.ResponseWriter, r *http.Request, req *Request, mode Mode) {
	auth := r.Header.Get("Authorization")
	if strings.HasPrefix(auth, "Bearer ") {
		l.t.Errorf("fake Linear: a personal API key is sent bare, not as Bearer: %q", auth)
	}
	if auth != l.Key || mode == BadKey {
		// Linear answers 400 with an authentication error.
		linearError(w, http.StatusBadRequest, "Authentication required, not authenticated", "AUTHENTICATION_ERROR",
			"authentication error", "You need to authenticate to access this operation.")
		return
	}
	switch operation(req.Query, "viewer", "issueCreate") {
	case "viewer":
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"viewer": map[string]any{"id": "user-1"}}})
	case "issueCreate":
		in, _ := req.Variables["input"].(map[string]any)
		team, _ := str(in, "teamId")
		title, okTitle := str(in, "title")
		desc, okDesc := str(in, "description")
		if !okTitle || !okDesc || title == "" {
			l.t.Errorf("fake Linear: issueCreate input %v lacks a title or a description", in)
		}
		if mode == GraphQLError || team != Team {
			linearError(w, http.StatusBadRequest, "Argument Validation Error", "INVALID_INPUT", "invalid input",
				"teamId must be the ID of a team you can access")
			return
		}
		l.mu.Lock()
		n := len(l.issues) + 1
		issue := LinearIssue{ID: fmt.Sprintf("9f0e%04d-0000-4000-8000-000000000000", n), Identifier: fmt.Sprintf("ENG-%d", n),
			TeamID: team, Title: title, Description: desc}
		issue.URL = "https://linear.app/acme/issue/" + strings.ToLower(issue.Identifier) + "/run-failed"
		l.issues = append(l.issues, issue)
		l.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"issueCreate": map[string]any{
			"success": true, "issue": map[string]any{"id": issue.ID, "identifier": issue.Identifier, "title": title, "url": issue.URL}}}})
	default:
		linearError(w, http.StatusBadRequest, "Cannot query field on type Query", "GRAPHQL_VALIDATION_FAILED", "graphql error", "")
		l.t.Errorf("fake Linear: unexpected operation %q", req.Query)
	}
}

// ---- Monday.com ----

// Monday is a fake of Monday.com's GraphQL API (https://api.monday.com/v2): headers
// `Authorization: <token>` and `API-Version: YYYY-MM`, the me query, create_item and
// create_update.
type Monday struct {
	*server

	// Slug is the account's slug; NoURL makes items come without a url.
	Slug  string
	NoURL bool

	items []MondayItem
}

// MondayItem is an item the fake created, with the updates posted on it.
type MondayItem struct {
	ID, BoardID, GroupID, Name, URL string
	GroupSet                        bool // group_id was given (not null)
	Updates                         []string
}

// Board is the board ID the fake Monday.com knows.
const Board = "1234567890"

// NewMonday starts a fake Monday.com that accepts key.
func NewMonday(t testing.TB, key string) *Monday {
	m := &Monday{Slug: "acme"}
	m.server = newServer(t, key, m.handle)
	return m
}

// Items returns the items created so far.
func (m *Monday) Items() []MondayItem {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MondayItem, len(m.items))
	for i, it := range m.items {
		out[i] = it
		out[i].Updates = append([]string(nil), it.Updates...)
	}
	return out
}

var apiVersion = regexp.MustCompile(`^20[0-9]{2}-(01|04|07|10)$`)

// mondayError answers in Monday.com's unified error format (API 2025-01 and later).
func mondayError(w http.ResponseWriter, status int, message, code string, statusCode int, field string) {
	var data any = map[string]any{field: nil}
	if field == "" {
		data = nil
	}
	writeJSON(w, status, map[string]any{"data": data, "errors": []any{map[string]any{"message": message,
		"locations": []any{map[string]any{"line": 2, "column": 3}}, "path": []any{field},
		"extensions": map[string]any{"code": code, "status_code": statusCode, "error_data": map[string]any{}}}},
		"account_id": 12345})
}

func (m *Monday) handle(w http.ResponseWriter, r *http.Request, req *Request, mode Mode) {
	if v := r.Header.Get("API-Version"); !apiVersion.MatchString(v) {
		m.t.Errorf("fake Monday.com: API-Version %q, want a release such as 2026-07", v)
	}
	auth := r.Header.Get("Authorization")
	if auth != m.Key || mode == BadKey {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"errors": []any{map[string]any{"message": "Not Authenticated",
			"extensions": map[string]any{"code": "UNAUTHENTICATED", "status_code": 401}}}})
		return
	}
	op := operation(req.Query, "me", "create_item", "create_update")
	if mode == LegacyError && op != "me" {
		writeJSON(w, http.StatusOK, map[string]any{"error_code": "InvalidBoardIdException",
			"error_message": "The board does not exist", "status_code": 200, "error_data": map[string]any{"board_id": 1}})
		return
	}
	switch op {
	case "me":
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"me": map[string]any{"id": "4012689",
			"account": map[string]any{"id": "18888528", "slug": m.Slug}}}, "account_id": 18888528})
	case "create_item":
		board, _ := str(req.Variables, "boardId")
		name, _ := str(req.Variables, "itemName")
		group, groupSet := str(req.Variables, "groupId")
		if name == "" {
			m.t.Errorf("fake Monday.com: create_item without an item name: %v", req.Variables)
		}
		if mode == GraphQLError || board != Board {
			mondayError(w, http.StatusOK, "The board does not exist or you do not have access to it", "ResourceNotFoundException",
				404, "create_item")
			return
		}
		m.mu.Lock()
		it := MondayItem{ID: fmt.Sprint(9000000000 + len(m.items) + 1), BoardID: board, GroupID: group, GroupSet: groupSet, Name: name}
		link := "https://" + m.Slug + ".monday.com/boards/" + board + "/pulses/" + it.ID
		if !m.NoURL {
			it.URL = link
		}
		m.items = append(m.items, it)
		m.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"create_item": map[string]any{
			"id": it.ID, "name": name, "url": it.URL}}, "account_id": 18888528})
	case "create_update":
		item, _ := str(req.Variables, "itemId")
		body, _ := str(req.Variables, "body")
		if mode == NoUpdate {
			mondayError(w, http.StatusOK, "Update body is too long", "InvalidArgumentException", 400, "create_update")
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := range m.items {
			if m.items[i].ID == item {
				m.items[i].Updates = append(m.items[i].Updates, body)
				writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"create_update": map[string]any{"id": "u" + item}}})
				return
			}
		}
		mondayError(w, http.StatusOK, "Item not found", "ResourceNotFoundException", 404, "create_update")
	default:
		mondayError(w, http.StatusOK, "Parse error on query", "GraphQLParseError", 400, "")
		m.t.Errorf("fake Monday.com: unexpected operation %q", req.Query)
	}
}
