// Package host is what a source-control host (GitHub, GitLab) implements for Verdict: checking
// a token, setting a commit status, keeping one comment on a pull or merge request up to date,
// and reading the host's signed webhook deliveries. It also holds the hosts' one HTTP transport
// for their REST APIs: JSON in and out, a bound on each call and on each answer, and errors
// classified by what the caller can do about them, never carrying the token.
package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"verdict/internal/redact"
)

// Host is one source-control host at one API address.
type Host interface {
	// Check asks the host whether token is valid; ErrRefused when it is not.
	Check(ctx context.Context, token string) error
	// SetStatus sets the commit status of sha in repo.
	SetStatus(ctx context.Context, token, repo, sha string, st Status) error
	// Comment writes body as the comment commentID on the request (pull or merge request
	// number) of repo. Without a commentID (or when the host no longer has it), the request's
	// first comments are searched for one holding marker, which is updated; else a new comment
	// is made. It returns the comment's ID.
	Comment(ctx context.Context, token, repo string, request int64, commentID, marker, body string) (string, error)
}

// Hooks reads a host's webhook deliveries.
type Hooks interface {
	// Verify reports whether the delivery's headers prove it was sent with secret (GitHub's
	// HMAC of the raw body, GitLab's token), compared in constant time.
	Verify(h http.Header, body []byte, secret string) bool
	// Parse reads a verified delivery. An event Verdict does not act on is not an error: it
	// has a Skip reason.
	Parse(h http.Header, body []byte) (*Event, error)
	// Events are the host's event names a hook can choose, in the API's spelling.
	Events() []string
}

// State is a commit status's state as Verdict words it; each host maps it to its own.
type State string

const (
	Pending   State = "pending"
	Success   State = "success"
	Failure   State = "failure"
	Error     State = "error"
	Cancelled State = "cancelled"
)

// Status is a commit status.
type Status struct {
	State       State
	TargetURL   string
	Description string // at most MaxDescription characters (GitHub's bound)
	Context     string // "verdict/<project>"
}

// MaxDescription bounds a status's description, in characters (GitHub refuses more than 140).
const MaxDescription = 140

// Event is a delivery as Verdict reads it.
type Event struct {
	// Kind is the host's event name ("push", "pull_request", "merge_request", "ping").
	Kind string
	// DeliveryID is the host's ID of the delivery (X-GitHub-Delivery, X-Gitlab-Event-UUID),
	// the same when the host delivers it again.
	DeliveryID string
	Repo       string // "owner/name", or a GitLab project's path
	Branch     string // the branch under test: the pushed one, or the request's source
	// Target is the branch a request would merge into; for a push, the pushed branch. The
	// hook's branch globs match it.
	Target string
	Commit string // the commit under test (40 hex characters)
	// Request is the pull or merge request's number, 0 for a push.
	Request int64
	// Skip, when set, says why the event queues no run (a tag, a deleted branch, a request
	// closed or edited without new commits).
	Skip string
}

// Errors a host call ends with, for errors.Is.
var (
	ErrRefused     = errors.New("token refused")       // 401, or 403 on a check
	ErrForbidden   = errors.New("forbidden")           // 403: the token lacks a scope
	ErrNotFound    = errors.New("not found")           // 404: no such repository, commit or comment
	ErrInvalid     = errors.New("invalid request")     // 400, 422
	ErrRateLimited = errors.New("rate limited")        // 429, or 403 with the rate limit spent
	ErrUpstream    = errors.New("host failed")         // 5xx, or an answer that cannot be read
	ErrUnreachable = errors.New("host not reachable")  // the call did not reach the host
	ErrTimeout     = errors.New("host did not answer") // the call's bound passed
)

// CallError is a failed call: its kind, the HTTP status (0 when none), and the host's message,
// cleaned of the token.
type CallError struct {
	Kind    error
	Status  int
	Message string
	Op      string // "POST /repos/{owner}/{repo}/statuses/{sha}"
	// Cause is the transport's error when the call did not reach the host (the egress guard's
	// egress.ErrRefused among them), for errors.Is.
	Cause error
}

func (e *CallError) Error() string {
	s := e.Op + ": " + e.Kind.Error()
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *CallError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

// Permanent reports whether err will fail the same way if tried again (a refused token, a
// missing repository, a request the host calls invalid), so a delivery is not retried for it.
func Permanent(err error) bool {
	return errors.Is(err, ErrRefused) || errors.Is(err, ErrForbidden) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrInvalid)
}

// Bounds of a call.
const (
	DefaultTimeout   = 15 * time.Second
	maxResponseBytes = 1 << 20
)

// Client is the transport of a host's REST API: Base is the API's root
// ("https://api.github.com", "https://gitlab.example.com/api/v4"), HTTP the client that reaches
// it (the egress guard's, which follows no redirect), Auth sets the token's headers.
type Client struct {
	Base      string
	HTTP      *http.Client
	Timeout   time.Duration // of each call; default DefaultTimeout
	Auth      func(h http.Header, token string)
	UserAgent string
	// Headers are set on every request (GitHub's Accept and API version).
	Headers map[string]string
}

// Do calls method path (under Base) with token and in as the JSON body (nil: none), and decodes
// a 2xx answer into out (nil: discarded). op names the call in errors.
func (c *Client) Do(ctx context.Context, token, method, path, op string, in, out any) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, body)
	if err != nil {
		return &CallError{Kind: ErrUnreachable, Op: op, Message: "the host's address is not a valid URL"}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", c.UserAgent)
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	c.Auth(req.Header, token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
			return &CallError{Kind: ErrTimeout, Op: op, Message: "no answer within " + timeout.String()}
		}
		if errors.Is(err, context.Canceled) {
			return err
		}
		return &CallError{Kind: ErrUnreachable, Op: op, Message: redact.Clean(err.Error(), token), Cause: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return &CallError{Kind: ErrUnreachable, Op: op, Status: resp.StatusCode, Message: redact.Clean(err.Error(), token)}
	}
	if len(raw) > maxResponseBytes {
		return &CallError{Kind: ErrUpstream, Op: op, Status: resp.StatusCode, Message: "the answer is larger than 1 MiB"}
	}
	if resp.StatusCode/100 == 2 {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return &CallError{Kind: ErrUpstream, Op: op, Status: resp.StatusCode, Message: "the answer is not the JSON expected"}
		}
		return nil
	}
	return &CallError{Kind: kindOf(resp, raw), Op: op, Status: resp.StatusCode, Message: redact.Clean(message(raw), token)}
}

// kindOf classifies a refusal by its status (and, for GitHub's 403, whether the rate limit was
// spent).
func kindOf(resp *http.Response, raw []byte) error {
	switch s := resp.StatusCode; {
	case s == http.StatusUnauthorized:
		return ErrRefused
	case s == http.StatusTooManyRequests,
		s == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" ||
			strings.Contains(strings.ToLower(message(raw)), "rate limit")):
		return ErrRateLimited
	case s == http.StatusForbidden:
		return ErrForbidden
	case s == http.StatusNotFound:
		return ErrNotFound
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		return ErrInvalid
	default:
		return ErrUpstream
	}
}

// message is the host's own words from an error body: GitHub's {message, documentation_url}
// (with errors[] for a 422), GitLab's {message} (a string or an object of fields) or {error}.
func message(raw []byte) string {
	var body struct {
		Message json.RawMessage `json:"message"`
		Error   string          `json:"error"`
		Errors  []struct {
			Field   string `json:"field"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return ""
	}
	var parts []string
	var s string
	if json.Unmarshal(body.Message, &s) == nil && s != "" {
		parts = append(parts, s)
	} else if len(body.Message) > 0 && string(body.Message) != "null" {
		parts = append(parts, string(body.Message)) // GitLab's {"message": {"field": ["is invalid"]}}
	}
	if body.Error != "" {
		parts = append(parts, body.Error)
	}
	for _, e := range body.Errors {
		switch {
		case e.Message != "":
			parts = append(parts, e.Message)
		case e.Field != "":
			parts = append(parts, e.Field+" "+e.Code)
		}
	}
	return strings.Join(parts, "; ")
}

// Clip cuts s to at most n characters, marking a cut with "…".
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// SetPush fills ev from a push to ref leaving the branch at after (both hosts' push events say
// so alike): the branch, or why the push queues nothing (not a branch, or the branch deleted:
// deleted, or an all-zero after).
func (ev *Event) SetPush(ref, after string, deleted bool) {
	ev.Commit = after
	branch, isBranch := strings.CutPrefix(ref, "refs/heads/")
	ev.Branch, ev.Target = branch, branch
	switch {
	case !isBranch:
		ev.Skip = "the push is not to a branch (" + ref + ")"
	case deleted || strings.Trim(after, "0") == "":
		ev.Skip = "the push deleted the branch"
	}
}

// CheckEvent checks what an event that queues a run carries, since its values become the run's
// labels: a repository path, a branch of at most 256 characters without control characters, a
// commit of 7 to 64 hex digits, a request's number above 0 when it is one.
func CheckEvent(ev *Event) error {
	switch {
	case ev.Repo == "" || len(ev.Repo) > 255 || strings.ContainsFunc(ev.Repo, isControl):
		return errors.New("the event names no repository")
	case ev.Branch == "" || len(ev.Branch) > 256 || strings.ContainsFunc(ev.Branch, isControl),
		len(ev.Target) > 256 || strings.ContainsFunc(ev.Target, isControl):
		return errors.New("the event names no valid branch")
	case !isHex(ev.Commit) || len(ev.Commit) < 7 || len(ev.Commit) > 64:
		return errors.New("the event names no valid commit")
	case ev.Request < 0:
		return errors.New("the event's request number is negative")
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}
