// Package gqlclient carries a tracker's GraphQL operations over HTTP: it is the transport under
// the typed operations genqlient generates for each tracker (internal/integrations/linear,
// internal/integrations/monday). Each call sends the organization's API key in the
// Authorization header, is bounded in time (15 s by default) and in the size of what it reads,
// follows no redirect, and ends in data or a [*tracker.Error] whose Kind says what went wrong: the key
// refused, the tracker's own error (with its message), no answer in time, no connection, or an
// answer that is not the GraphQL response it should be.
//
// The package does not log, and no error it returns contains the key.
package gqlclient

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

	"github.com/Khan/genqlient/graphql"

	"verdict/internal/integrations/tracker"
	"verdict/internal/redact"
)

// Config is one tracker's API.
type Config struct {
	Tracker string // its name in errors
	URL     string // the GraphQL endpoint
	// Timeout bounds each call, from the request sent to the answer read (default 15 s).
	Timeout time.Duration
	// Header holds headers every call sends besides Authorization (an API version).
	Header http.Header
	// HTTPClient, if set, carries the calls (a proxy, custom TLS); it is copied, never changed.
	HTTPClient *http.Client
}

// DefaultTimeout bounds a call when Config.Timeout is zero.
const DefaultTimeout = 15 * time.Second

// maxResponseBytes bounds what is read of an answer: the operations' answers are a few hundred
// bytes, error bodies a few kilobytes.
const maxResponseBytes = 1 << 20

// Endpoint is a tracker's API. It holds no key: each client it makes carries one.
type Endpoint struct {
	cfg  Config
	http *http.Client
}

// New returns the Endpoint of cfg.
func New(cfg Config) *Endpoint {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		copied := *cfg.HTTPClient
		hc = &copied
	}
	// A redirect is answered as it is: following one would send the key to another address.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Endpoint{cfg: cfg, http: hc}
}

// Timeout is the bound of each call.
func (e *Endpoint) Timeout() time.Duration { return e.cfg.Timeout }

// With returns a client for the generated operations that authenticates with apiKey.
func (e *Endpoint) With(apiKey string) graphql.Client { return &client{e: e, key: apiKey} }

type client struct {
	e   *Endpoint
	key string
}

// MakeRequest sends one operation and decodes its data into resp.Data. Any failure is a *tracker.Error.
func (c *client) MakeRequest(ctx context.Context, req *graphql.Request, resp *graphql.Response) error {
	fail := func(kind error, status int, msg, code string) error {
		return &tracker.Error{Tracker: c.e.cfg.Tracker, Op: req.OpName, Kind: kind, StatusCode: status, Message: redact.Clean(msg, c.key), Code: code}
	}
	if strings.TrimSpace(c.key) == "" {
		return fail(tracker.ErrKeyRefused, 0, "no API key", "")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("gqlclient: encode %s: %w", req.OpName, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.e.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(callCtx, http.MethodPost, c.e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fail(tracker.ErrUnreachable, 0, "invalid API address", "")
	}
	for k, v := range c.e.cfg.Header {
		hr.Header[k] = v
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "Verdict")
	hr.Header.Set("Authorization", c.key)

	res, err := c.e.http.Do(hr)
	var raw []byte
	if err == nil {
		raw, err = io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
		res.Body.Close()
	}
	switch {
	case err == nil:
	case ctx.Err() != nil: // the caller gave up
		return &tracker.Error{Tracker: c.e.cfg.Tracker, Op: req.OpName, Kind: ctx.Err()}
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		return fail(tracker.ErrTimeout, 0, fmt.Sprintf("no answer within %s", c.e.cfg.Timeout), "")
	default:
		return fail(tracker.ErrUnreachable, 0, err.Error(), "")
	}
	if len(raw) > maxResponseBytes {
		return fail(tracker.ErrMalformed, res.StatusCode, fmt.Sprintf("the answer is larger than %d bytes", maxResponseBytes), "")
	}
	return c.e.decode(raw, res.StatusCode, resp, fail)
}

// envelope is a GraphQL response, with the error fields Monday.com's API used before its
// 2025-01 version (error_message, error_code, status_code).
type envelope struct {
	Data         json.RawMessage `json:"data"`
	Errors       json.RawMessage `json:"errors"`
	ErrorMessage string          `json:"error_message"`
	ErrorCode    any             `json:"error_code"`
	StatusCode   any             `json:"status_code"`
}

// gqlError is one entry of a response's errors.
type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// authCodes are error codes that say the key itself was refused (not that it lacks a right).
var authCodes = map[string]bool{"AUTHENTICATION_ERROR": true, "UNAUTHENTICATED": true, "Unauthenticated": true,
	"NotAuthenticated": true, "InvalidTokenException": true}

func (e *Endpoint) decode(raw []byte, status int, resp *graphql.Response,
	fail func(kind error, status int, msg, code string) error) error {
	var env envelope
	jsonErr := json.Unmarshal(raw, &env)
	var errs []gqlError
	if jsonErr == nil && len(env.Errors) > 0 && string(env.Errors) != "null" {
		if err := json.Unmarshal(env.Errors, &errs); err != nil {
			return fail(tracker.ErrMalformed, status, "its errors are not a list of GraphQL errors", "")
		}
	}
	// What the tracker said went wrong, if anything.
	msg, code, refused := "", "", status == http.StatusUnauthorized || status == http.StatusForbidden
	if jsonErr == nil {
		var msgs []string
		for _, ge := range errs {
			m := strings.TrimSpace(ge.Message)
			c, _ := ge.Extensions["code"].(string)
			if t, _ := ge.Extensions["type"].(string); strings.EqualFold(t, "authentication error") || authCodes[c] ||
				number(ge.Extensions["status_code"]) == http.StatusUnauthorized {
				refused = true
			}
			if u, _ := ge.Extensions["userPresentableMessage"].(string); u != "" && u != m {
				m += ": " + u
			}
			if m != "" && len(msgs) < 3 {
				msgs = append(msgs, m)
			}
			if code == "" {
				code = c
			}
		}
		if len(errs) > 0 && len(msgs) == 0 {
			msgs = append(msgs, "an error without a message")
		}
		if env.ErrorMessage != "" {
			msgs = append(msgs, env.ErrorMessage)
			if c, ok := env.ErrorCode.(string); ok && code == "" {
				code = c
			}
			if number(env.StatusCode) == http.StatusUnauthorized {
				refused = true
			}
		}
		msg = strings.Join(msgs, "; ")
	}
	switch {
	case refused:
		return fail(tracker.ErrKeyRefused, status, msg, code)
	case status < 200 || status > 299:
		if msg == "" {
			msg = fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
		}
		return fail(tracker.ErrUpstream, status, msg, code)
	case jsonErr != nil:
		return fail(tracker.ErrMalformed, status, "the answer is not JSON", "")
	case msg != "":
		return fail(tracker.ErrUpstream, status, msg, code)
	case len(env.Data) == 0 || string(env.Data) == "null":
		return fail(tracker.ErrMalformed, status, "the answer has no data", "")
	}
	if err := json.Unmarshal(env.Data, resp.Data); err != nil {
		return fail(tracker.ErrMalformed, status, "its data do not have the operation's shape", "")
	}
	return nil
}

// number is a JSON number or numeric string as an int; 0 when it is neither.
func number(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case string:
		var i int
		if _, err := fmt.Sscanf(n, "%d", &i); err == nil {
			return i
		}
	}
	return 0
}
