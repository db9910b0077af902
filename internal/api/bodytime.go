package api

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// limitBodyTime bounds the time a request's body may take to arrive: a client that sends one
// byte every few seconds would otherwise hold a connection (and a descriptor) for as long as
// it likes, on unauthenticated routes too. The connection's read deadline is set when the
// request has a body and cleared once the body has been read to its end, so it never touches
// the response: a long download, a streamed log or a Socket.IO long-poll (a GET, no body) is not
// cut. When the deadline passes, reading the body fails and the handler answers 400 (JSON
// routes) or gives up; the server then closes the connection.
func limitBodyTime(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if d <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
		return // not a real connection (a test recorder): nothing to bound
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
}

// deadlineBody clears the read deadline at the end of the body, before the server's own
// background read (which notices a client going away) starts waiting on the connection.
type deadlineBody struct {
	io.ReadCloser
	once  sync.Once
	clear func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.clear)
	}
	return n, err
}
