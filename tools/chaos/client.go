package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// apiClient calls Verdict's API through the balancer, as a CI job or a script would.
type apiClient struct {
	base  string
	token string
	hc    *http.Client
}

// apiError is an answer that was not 2xx.
type apiError struct {
	status int
	body   string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

func statusOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status
	}
	return 0
}

// call makes one request; out (when not nil) receives a 2xx answer's JSON.
func (c *apiClient) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return &apiError{status: res.StatusCode, body: strings.TrimSpace(string(b[:min(len(b), 300)]))}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// retried reports whether a well-behaved client tries the call again: the balancer could not
// reach a replica (502), the service said to come back (503), or the connection failed.
func retried(err error) bool {
	s := statusOf(err)
	return s == 0 || s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout
}

// callRetrying retries what retried allows every 250 ms until timeout.
func (c *apiClient) callRetrying(ctx context.Context, timeout time.Duration, method, path string, in, out any) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.call(ctx, method, path, in, out)
		if err == nil || !retried(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// execution is the part of a run the driver reads.
type execution struct {
	TaskID   string   `json:"taskId"`
	Status   string   `json:"status"`
	Error    *string  `json:"error"`
	ExitCode *int     `json:"exitCode"`
	Runner   string   `json:"runner"`
	Notes    []string `json:"notes"`
	Summary  struct {
		Total int `json:"total"`
	} `json:"summary"`
	TrackerAIssues []struct {
		Title string `json:"title"`
	} `json:"trackerAIssues"`
}

func (e *execution) final() bool {
	switch e.Status {
	case "PASSED", "FAILED", "UNSTABLE", "ERROR", "CANCELLED":
		return true
	}
	return false
}

func (e *execution) errText() string {
	if e.Error == nil {
		return ""
	}
	return *e.Error
}

func (c *apiClient) get(ctx context.Context, taskID string) (*execution, error) {
	var out struct {
		Execution execution `json:"execution"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/executions/"+taskID, nil, &out); err != nil {
		return nil, err
	}
	return &out.Execution, nil
}

func (c *apiClient) getRetrying(ctx context.Context, taskID string) (*execution, error) {
	var out struct {
		Execution execution `json:"execution"`
	}
	if err := c.callRetrying(ctx, 20*time.Second, http.MethodGet, "/api/executions/"+taskID, nil, &out); err != nil {
		return nil, err
	}
	return &out.Execution, nil
}

// storedLog reads a run's whole stored log.
func (c *apiClient) storedLog(ctx context.Context, taskID string) (string, error) {
	var out struct {
		Logs string `json:"logs"`
	}
	err := c.callRetrying(ctx, 20*time.Second, http.MethodGet, "/api/executions/"+taskID+"/logs", nil, &out)
	return out.Logs, err
}

// queueBody is a run of the slow sample image printing lines numbered lines, one every
// interval.
func queueBody(image, taskID string, lines int, interval time.Duration) map[string]any {
	return map[string]any{"image": image, "taskId": taskID, "timeoutSeconds": 300,
		"envVars": map[string]string{"LINES": strconv.Itoa(lines), "INTERVAL_MS": strconv.Itoa(int(interval / time.Millisecond))}}
}

// ---- following a run's event stream (SSE) through the fault ----

// follower reads GET /api/executions/{taskId}/events until the run's final status, resuming
// with Last-Event-ID after every break, as the API reference tells clients to.
type follower struct {
	taskID string
	done   chan struct{}

	mu         sync.Mutex
	text       strings.Builder // every execution-log's text, in the order received
	lastID     int64
	final      string // the final status the stream announced
	reconnects int
	refusals   map[int]int // non-200 answers to (re)connections, by status
	anomalies  []string    // an event's offset that did not continue the text
}

func follow(ctx context.Context, c *apiClient, taskID string) *follower {
	f := &follower{taskID: taskID, done: make(chan struct{}), refusals: map[int]int{}}
	go f.run(ctx, c)
	return f
}

func (f *follower) snapshot() (text string, final string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.text.String(), f.final
}

func (f *follower) run(ctx context.Context, c *apiClient) {
	defer close(f.done)
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			f.mu.Lock()
			f.reconnects++
			f.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second): // as a client's reconnection delay
			}
		}
		if f.stream(ctx, c) {
			return
		}
	}
}

// stream reads one connection; true once the final status came.
func (f *follower) stream(ctx context.Context, c *apiClient) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/executions/"+f.taskID+"/events", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	f.mu.Lock()
	if f.lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(f.lastID, 10))
	}
	f.mu.Unlock()
	res, err := c.hc.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		f.mu.Lock()
		f.refusals[res.StatusCode]++
		f.mu.Unlock()
		io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
		return false
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var id, event string
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event != "" && f.apply(id, event, data.String()) {
				return true
			}
			id, event = "", ""
			data.Reset()
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[5:], " "))
		}
	}
	return false
}

// apply takes one event; true when it is the run's final status.
func (f *follower) apply(id, event, data string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch event {
	case "execution-log":
		var ev struct {
			Log    string `json:"log"`
			Offset int64  `json:"offset"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			f.anomalies = append(f.anomalies, "undecodable execution-log: "+err.Error())
			return false
		}
		if have := int64(f.text.Len()); ev.Offset != have {
			f.anomalies = append(f.anomalies, fmt.Sprintf("execution-log at offset %d after %d bytes", ev.Offset, have))
		}
		f.text.WriteString(ev.Log)
	case "execution-updated":
		var ev execution
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			f.anomalies = append(f.anomalies, "undecodable execution-updated: "+err.Error())
			return false
		}
		if ev.final() {
			f.final = ev.Status
		}
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		f.lastID = n
	}
	return f.final != ""
}
