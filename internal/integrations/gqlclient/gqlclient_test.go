package gqlclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"verdict/internal/integrations/tracker"

	"github.com/Khan/genqlient/graphql"
)

const key = "key-TOPSECRET-123"

type answer struct {
	ID string `json:"id"`
}

// call sends one operation to a server that answers with status and body.
func call(t *testing.T, status int, body string, header ...string) (*answer, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != key || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("headers: %v", r.Header)
		}
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	e := New(Config{Tracker: "Fake", URL: srv.URL, Timeout: time.Second})
	var a struct {
		Thing *answer `json:"thing"`
	}
	err := e.With(key).MakeRequest(context.Background(), &graphql.Request{OpName: "Thing", Query: "query Thing { thing { id } }"},
		&graphql.Response{Data: &a})
	if err != nil && strings.Contains(err.Error(), "TOPSECRET") {
		t.Fatalf("the error shows the key: %v", err)
	}
	return a.Thing, err
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		kind   error
		msg    string
	}{
		{"data", 200, `{"data":{"thing":{"id":"1"}}}`, nil, ""},
		{"GraphQL error with data", 200, `{"data":{"thing":null},"errors":[{"message":"Thing not found","extensions":{"code":"NOT_FOUND"}}]}`,
			tracker.ErrUpstream, "Thing not found"},
		{"errors, several", 400, `{"errors":[{"message":"a"},{"message":"b"},{"message":"c"},{"message":"d"}]}`, tracker.ErrUpstream, "a; b; c"},
		{"authentication code", 400, `{"errors":[{"message":"Authentication required","extensions":{"code":"AUTHENTICATION_ERROR"}}]}`,
			tracker.ErrKeyRefused, "Authentication required"},
		{"HTTP 401 without a body", 401, ``, tracker.ErrKeyRefused, ""},
		{"legacy 401", 200, `{"error_message":"Not Authenticated","status_code":401}`, tracker.ErrKeyRefused, "Not Authenticated"},
		{"legacy error", 200, `{"error_code":"InvalidBoardIdException","error_message":"No board","status_code":200}`, tracker.ErrUpstream, "No board"},
		{"HTTP 500 text", 500, `oops`, tracker.ErrUpstream, "HTTP 500 Internal Server Error"},
		{"HTTP 503 JSON error", 503, `{"errors":[{"message":"Down for maintenance"}]}`, tracker.ErrUpstream, "Down for maintenance"},
		{"not JSON", 200, `<html>`, tracker.ErrMalformed, "not JSON"},
		{"no data", 200, `{}`, tracker.ErrMalformed, "no data"},
		{"data of another shape", 200, `{"data":{"thing":"x"}}`, tracker.ErrMalformed, "shape"},
		{"errors of another shape", 200, `{"errors":"boom"}`, tracker.ErrMalformed, "not a list"},
		{"the key echoed", 400, `{"errors":[{"message":"bad key ` + key + `"}]}`, tracker.ErrUpstream, "bad key [redacted]"},
		{"too large", 200, `{"data":{"thing":{"id":"` + strings.Repeat("x", maxResponseBytes) + `"}}}`, tracker.ErrMalformed, "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := call(t, c.status, c.body)
			if c.kind == nil {
				if err != nil || got == nil || got.ID != "1" {
					t.Fatalf("got %+v, %v", got, err)
				}
				return
			}
			var e *tracker.Error
			if !errors.As(err, &e) || !errors.Is(err, c.kind) || !strings.Contains(e.Message, c.msg) || e.Op != "Thing" {
				t.Fatalf("got %v, want %v with %q", err, c.kind, c.msg)
			}
		})
	}
}

// A redirect is not followed, so the key never goes to another address.
func TestNoRedirect(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed, with Authorization %q", r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	_, err := call(t, http.StatusTemporaryRedirect, "", "Location", elsewhere.URL)
	if !errors.Is(err, tracker.ErrUpstream) || !strings.Contains(err.Error(), "307") {
		t.Fatalf("got %v", err)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // then the server notices the client leaving
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	e := New(Config{Tracker: "Fake", URL: srv.URL, Timeout: 100 * time.Millisecond})
	req := &graphql.Request{OpName: "Thing", Query: "query Thing { thing { id } }"}
	start := time.Now()
	err := e.With(key).MakeRequest(context.Background(), req, &graphql.Response{Data: &struct{}{}})
	if !errors.Is(err, tracker.ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("got %v after %s", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	err = e.With(key).MakeRequest(ctx, req, &graphql.Response{Data: &struct{}{}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	srv.Close()
	err = e.With(key).MakeRequest(context.Background(), req, &graphql.Response{Data: &struct{}{}})
	if !errors.Is(err, tracker.ErrUnreachable) || strings.Contains(err.Error(), "TOPSECRET") {
		t.Fatalf("closed server: %v", err)
	}
	if err := e.With(" ").MakeRequest(context.Background(), req, &graphql.Response{Data: &struct{}{}}); !errors.Is(err, tracker.ErrKeyRefused) {
		t.Fatalf("no key: %v", err)
	}
}
