package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

var errEventTooLarge = errors.New("an event of the stream is too large")

// apiError is a refusal of the API: its status and error body.
type apiError struct {
	Status  int
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("the server answered %d", e.Status)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Code, e.Message, e.Status)
}

// unreachableError is a request that got no answer (connection refused, reset, timed out).
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return "the server is unreachable: " + e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// client calls Verdict's API with an API key.
type client struct {
	base string // the server's URL, without a trailing slash
	key  string
	http *http.Client
}

func newClient(server, key string) (*client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q is not an http(s) URL", server)
	}
	return &client{base: strings.TrimRight(server, "/"), key: key, http: &http.Client{}}, nil
}

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "verdict-cli")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// call sends a JSON request and decodes a 2xx answer into out (nil: ignored). A refusal is an
// *apiError, no answer an *unreachableError. Each call is bounded by a minute.
func (c *client) call(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return &unreachableError{err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return &unreachableError{err}
	}
	if res.StatusCode >= 300 {
		e := &apiError{Status: res.StatusCode}
		_ = json.Unmarshal(raw, e)
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the server's answer to %s %s is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// follow opens the run's event stream from byte offset since of its log.
func (c *client) follow(ctx context.Context, taskID string, since int64, shard int) (*http.Response, error) {
	path := "/api/executions/" + url.PathEscape(taskID) + "/events"
	if shard > 0 {
		path += "?shard=" + strconv.Itoa(shard)
	}
	req, err := c.request(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if since > 0 {
		req.Header.Set("Last-Event-ID", fmt.Sprint(since))
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, &unreachableError{err}
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		e := &apiError{Status: res.StatusCode}
		_ = json.Unmarshal(raw, e)
		return nil, e
	}
	return res, nil
}
