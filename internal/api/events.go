package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"verdict/internal/domain"
	"verdict/internal/follow"
	"verdict/internal/identity"
)

// Bounds of the SSE stream of a run's events.
const (
	sseEventBytes = 64 << 10         // the most log bytes one execution-log event carries
	ssePing       = 15 * time.Second // a comment line this often keeps proxies from closing it
	sseWriteWait  = 30 * time.Second // a client that takes longer for one event is dropped
	// sseGapWait bounds the wait for the stored log to catch up with a live event (the runner
	// emits a chunk, then stores it: the store lags by milliseconds, more under load). Live
	// events queue meanwhile, so a longer lag drops the follower before this bound ends it.
	sseGapWait = 30 * time.Second
)

// Follow registers followers of a run's live events (*follow.Broadcaster), each under its
// owners: ending an owner (follow.Broadcaster.End) ends its streams at once.
type Follow interface {
	Follow(org, task string, owners ...string) *follow.Follower
}

// The owners a stream is registered under: its user, the API key or the session it was opened
// with. internal/app ends them when the user loses access, the key is revoked or the session
// signed out.

// UserStreams names the streams of a user.
func UserStreams(userID string) string { return "user:" + userID }

// KeyStreams names the streams opened with an API key.
func KeyStreams(keyID string) string { return "key:" + keyID }

// SessionStreams names the streams opened with a session's token (auth.Claims.ID).
func SessionStreams(tokenID string) string { return "session:" + tokenID }

// streamOwners are the owners of a stream opened by p.
func streamOwners(p *identity.Principal) []string {
	owners := []string{UserStreams(p.UserID)}
	if p.APIKeyID != "" {
		owners = append(owners, KeyStreams(p.APIKeyID))
	}
	if p.SessionID != "" {
		owners = append(owners, SessionStreams(p.SessionID))
	}
	return owners
}

// logEvent is the data of an execution-log event, the Socket.IO payload.
type logEvent struct {
	TaskID string `json:"taskId"`
	Log    string `json:"log"`
	Offset int64  `json:"offset"`
	Shard  int    `json:"shard,omitempty"` // the shard followed (?shard=); its offsets are its log's
}

// executionEvents streams a run's events as Server-Sent Events: the log from the resume
// offset (Last-Event-ID, else ?since=, else 0) in execution-log events, then live
// execution-log and execution-updated events, until the final execution-updated. Every
// event's id is the byte offset of the log sent so far, so a client that reconnects with
// Last-Event-ID neither repeats nor skips a byte.
func (s *Server) executionEvents(w http.ResponseWriter, r *http.Request) {
	since := int64(0)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, ok := parseOffset([]string{v})
		if !ok {
			writeDomainError(w, domain.BadRequest("Validation error", "Last-Event-ID must be one byte offset: a whole number from 0"))
			return
		}
		since = n
	} else if v, has := r.URL.Query()["since"]; has {
		n, ok := parseOffset(v)
		if !ok {
			writeDomainError(w, domain.BadRequest("Validation error", "since must be one byte offset: a whole number from 0"))
			return
		}
		since = n
	}
	p := principalFrom(r)
	// The stream reads the run as listed (no parsed results) until its final event, which
	// reads it whole once.
	e, runTask, shard, err := s.logSource(r, p)
	if err != nil {
		s.fail(w, r, err, "Failed to fetch execution")
		return
	}
	// Follow before reading the run again: whatever happens from here on arrives as an event.
	// Registered under its owners, the stream ends as soon as the caller's access does (a
	// suspended user, a revoked key, a signed-out session), not at the next ping's re-check.
	f := s.follow.Follow(e.OrganizationID, e.TaskID, streamOwners(p)...)
	defer f.Close()
	if p.SessionID != "" && s.revokedSince(r) { // signed out while this request was authenticated
		writeDomainError(w, errInvalidToken)
		return
	}
	if e, err = s.executions.GetListed(r.Context(), p, e.TaskID); err != nil {
		s.fail(w, r, err, "Failed to fetch execution")
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	st := &sseStream{s: s, w: w, r: r, p: p, e: e, f: f, sent: since, rc: http.NewResponseController(w), runTask: runTask, shard: shard,
		bw: bufio.NewWriterSize(w, 8<<10)}
	// A dropped follower (its buffer filled while the client did not read, or its owner's
	// access ended) may be blocked in a write: cut it at once.
	done := make(chan struct{})
	defer st.end()
	defer close(done)
	go func() {
		select {
		case <-f.Gone():
			st.cut()
		case <-done:
		}
	}()
	var refused *domain.Error // the run deleted, the caller's access gone: nothing to report
	if err := st.run(f); err != nil && r.Context().Err() == nil && !errors.Is(err, errClientWrite) &&
		!errors.Is(err, errFollowerGone) && !errors.As(err, &refused) {
		s.log.Warn("streaming a run's events failed", "task", e.TaskID, "err", err)
	}
}

// revokedSince reports whether the bearer token of r, verified by the middleware, was revoked
// since: a revocation between the request's authentication and its Follow found no stream to
// end, so the stream checks once more when registered (a cached verification, no I/O).
func (s *Server) revokedSince(r *http.Request) bool {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	_, err := s.jwt.Verify(token)
	return err != nil
}

var errFollowerGone = errors.New("the follower was dropped: it did not keep up")

type sseStream struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	p    *identity.Principal
	e    *domain.Execution
	f    *follow.Follower
	rc   *http.ResponseController
	bw   *bufio.Writer
	sent int64 // the log's bytes the client has: the offset of the next byte to send
	// runTask and shard name the run and its shard whose log is followed (?shard=); shard 0:
	// the run's own.
	runTask string
	shard   int

	mu    sync.Mutex
	gone  bool // cut: every write fails at once
	ended bool // the handler has returned: the connection may serve the next request
}

// cut makes the current write and every later one fail at once, unless the stream has ended.
func (st *sseStream) cut() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return
	}
	st.gone = true
	_ = st.rc.SetWriteDeadline(time.Now().Add(-time.Second))
}

// end leaves the connection as the server expects it for its next request: without a write
// deadline, unless the stream was cut (then the connection closes).
func (st *sseStream) end() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ended = true
	if !st.gone {
		_ = st.rc.SetWriteDeadline(time.Time{})
	}
}

// deadline gives the next write sseWriteWait, unless the stream was cut.
func (st *sseStream) deadline() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gone {
		return errFollowerGone
	}
	_ = st.rc.SetWriteDeadline(time.Now().Add(sseWriteWait))
	return nil
}

func (st *sseStream) run(f *follow.Follower) error {
	ctx := st.r.Context()
	if st.e.Status.Final() {
		return st.finish(ctx, nil)
	}
	if err := st.catchUp(ctx, -1); err != nil {
		return err
	}
	if err := st.flush(); err != nil {
		return err
	}
	ping := time.NewTicker(ssePing)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.Gone():
			return errFollowerGone
		case <-ping.C:
			if err := st.ping(ctx); err != nil {
				return err
			}
			if st.e.Status.Final() { // an update this replica never heard of
				return st.finish(ctx, nil)
			}
		case ev := <-f.Events():
			f.Took(ev)
			switch ev.Name {
			case follow.EventLog:
				if err := st.live(ctx, ev); err != nil {
					return err
				}
			case follow.EventUpdated:
				if ev.Final {
					return st.finish(ctx, ev.Data)
				}
				if err := st.write(follow.EventUpdated, ev.Data); err != nil {
					return err
				}
				// Sent at once: a sharded run's stream carries no log lines to flush it, and its
				// client learns of a retry container from its update.
				if err := st.flush(); err != nil {
					return err
				}
			}
		}
	}
}

// live applies a live log event by its offset: what was sent is skipped, and a gap before it
// is read from the store first.
func (st *sseStream) live(ctx context.Context, ev *follow.Event) error {
	end := ev.Offset + int64(len(ev.Log))
	if end <= st.sent {
		return nil
	}
	if ev.Offset > st.sent {
		if err := st.catchUp(ctx, ev.Offset); err != nil {
			return err
		}
	}
	if err := st.writeLog([]byte(ev.Log[st.sent-ev.Offset:]), true); err != nil {
		return err
	}
	return st.flush()
}

// catchUp sends the stored log from st.sent up to offset to (to < 0: to the stored end). Up to
// a given offset it waits, briefly, for the store to hold it.
func (st *sseStream) catchUp(ctx context.Context, to int64) error {
	deadline := time.Now().Add(sseGapWait)
	for to < 0 || st.sent < to {
		want := int64(sseEventBytes)
		if to >= 0 {
			want = min(want, to-st.sent)
		}
		var buf []byte // grown to what the store has: most reads are short
		got, err := st.s.executions.ReadLog(ctx, st.p, st.e, st.sent, want, func(b []byte) error {
			buf = append(buf, b...)
			return nil
		})
		if err != nil {
			return err
		}
		if got < want { // the store's end
			if len(buf) > 0 {
				if err := st.writeLog(buf, true); err != nil {
					return err
				}
			}
			if to < 0 || st.sent >= to {
				return nil
			}
			if time.Now().After(deadline) {
				return errors.New("the stored log did not catch up with the live events")
			}
			if err := st.flush(); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-st.f.Gone():
				return errFollowerGone
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err := st.writeLog(buf, to >= 0 && st.sent+got >= to); err != nil {
			return err
		}
	}
	return nil
}

// writeLog sends text, which starts at st.sent, in events of at most sseEventBytes, cut after a
// line where there is one. With whole, all of it is sent; otherwise a tail without a newline
// (or a cut character) may be kept back for the next read.
func (st *sseStream) writeLog(text []byte, whole bool) error {
	for len(text) > 0 {
		n := len(text)
		if n > sseEventBytes {
			n = cut(text[:sseEventBytes])
		} else if !whole {
			n = cut(text)
		}
		if n == 0 {
			if !whole {
				return nil
			}
			n = min(len(text), sseEventBytes)
		}
		data, err := json.Marshal(logEvent{TaskID: st.runTask, Log: string(text[:n]), Offset: st.sent, Shard: st.shard})
		if err != nil {
			return err
		}
		st.sent += int64(n)
		if err := st.write(follow.EventLog, data); err != nil {
			return err
		}
		text = text[n:]
	}
	return nil
}

// cut returns the length of text up to its last newline, or if it has none, up to its last
// whole UTF-8 character.
func cut(text []byte) int {
	if i := bytes.LastIndexByte(text, '\n'); i >= 0 {
		return i + 1
	}
	return utf8Cut(text)
}

// utf8Cut returns the length of text without a trailing incomplete UTF-8 sequence.
func utf8Cut(text []byte) int {
	for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
		if utf8.RuneStart(text[i]) {
			if !utf8.FullRune(text[i:]) {
				return i
			}
			break
		}
	}
	return len(text)
}

// finish sends the rest of the stored log and the final execution-updated: view, or when nil,
// the run as stored now, as an event shows it (Views.ExecutionEvent).
func (st *sseStream) finish(ctx context.Context, view json.RawMessage) error {
	if err := st.catchUp(ctx, -1); err != nil {
		return err
	}
	if view == nil {
		get := st.s.executions.Get
		if st.shard > 0 {
			get = st.s.executions.GetListed // a shard's record: its state, not a run's results
		}
		e, err := get(ctx, st.p, st.e.TaskID)
		if err != nil {
			return err
		}
		if e.ID != st.e.ID {
			return errors.New("the run was replaced")
		}
		st.s.recordIndexes(ctx, e)
		b, err := MarshalView(st.s.views.ExecutionEvent(e, st.s.clock()))
		if err != nil {
			return err
		}
		view = b
	}
	if err := st.write(follow.EventUpdated, view); err != nil {
		return err
	}
	return st.flush()
}

// ping writes a comment line, re-reads the caller and the run (deleted: the stream ends). A
// caller whose access ended was cut already through the stream's owners; re-checking here is
// the backstop for what the cut cannot reach (another replica's change without Redis).
func (st *sseStream) ping(ctx context.Context) error {
	if _, err := st.bw.WriteString(": ping\n\n"); err != nil {
		return errors.Join(errClientWrite, err)
	}
	if err := st.flush(); err != nil {
		return err
	}
	// A database that is away cannot refuse the caller nor end the run: the stream goes on
	// (a browser's EventSource does not come back after an error status) and the next ping
	// checks again.
	p, err := st.s.principalOf(st.r)
	if errors.Is(err, domain.ErrUnavailable) {
		return nil
	}
	if err != nil {
		return err
	}
	st.p = p
	e, err := st.s.executions.GetListed(ctx, p, st.e.TaskID)
	if errors.Is(err, domain.ErrUnavailable) {
		return nil
	}
	if err != nil {
		return err
	}
	if e.ID != st.e.ID {
		return errors.New("the run was replaced")
	}
	st.e = e
	return nil
}

func (st *sseStream) write(event string, data []byte) error {
	if err := st.deadline(); err != nil {
		return err
	}
	st.bw.WriteString("id: ")
	st.bw.WriteString(strconv.FormatInt(st.sent, 10))
	st.bw.WriteString("\nevent: ")
	st.bw.WriteString(event)
	st.bw.WriteString("\ndata: ")
	st.bw.Write(data)
	if _, err := st.bw.WriteString("\n\n"); err != nil {
		return errors.Join(errClientWrite, err)
	}
	return nil
}

// flush sends what is buffered to the client now.
func (st *sseStream) flush() error {
	if err := st.deadline(); err != nil {
		return err
	}
	if err := st.bw.Flush(); err != nil {
		return errors.Join(errClientWrite, err)
	}
	if err := st.rc.Flush(); err != nil {
		return errors.Join(errClientWrite, err)
	}
	return nil
}
