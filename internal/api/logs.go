package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

// Log reading bounds. A log is read a window at a time, each window read whole from the
// database before it is written: memory per request is a window whatever the log's size, and
// the database connection goes back to the pool while a slow client reads.
const (
	logWindowBytes = 256 << 10
	logPageBytes   = 1 << 20          // the most one ?since= page answers
	logWriteWait   = 60 * time.Second // a client that takes longer for a window is dropped
)

// executionLogs answers a run's log. Without since, the whole log as {taskId, status, logs};
// with since, the page from that byte offset as {data: {log, next, complete}}. Both are
// written as they are read, never held whole.
func (s *Server) executionLogs(w http.ResponseWriter, r *http.Request) {
	since := int64(-1)
	if v, has := r.URL.Query()["since"]; has {
		n, ok := parseOffset(v)
		if !ok {
			writeDomainError(w, domain.BadRequest("Validation error", "since must be one byte offset: a whole number from 0"))
			return
		}
		since = n
	}
	// The log needs the run's ID and status, never its parsed results.
	e, runTask, shard, err := s.logSource(r, principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch logs")
		return
	}
	lw := &logWriter{s: s, w: w, r: r, e: e}
	if since < 0 {
		prefix := `{"success":true,"taskId":` + jsonText(runTask) + `,"status":` + jsonText(string(e.Status)) + `,"logs":"`
		if shard > 0 {
			prefix = `{"success":true,"taskId":` + jsonText(runTask) + `,"shard":` + strconv.Itoa(shard) +
				`,"status":` + jsonText(string(e.Status)) + `,"logs":"`
		}
		if _, _, err := lw.copy(prefix, 0, -1); err != nil {
			lw.failed(err)
			return
		}
		lw.js.flushHeld()
		lw.finish(`"}` + "\n")
		return
	}
	n, atEnd, err := lw.copy(`{"success":true,"data":{"log":"`, since, logPageBytes)
	if err != nil {
		lw.failed(err)
		return
	}
	// The status was read before the log, so a page of a run still going is never complete.
	complete := atEnd && e.Status.Final()
	if complete {
		lw.js.flushHeld()
	} else {
		n -= int64(lw.js.dropHeld()) // a character cut by the page end starts the next page
	}
	lw.finish(`","next":` + strconv.FormatInt(since+n, 10) + `,"complete":` + strconv.FormatBool(complete) + "}}\n")
}

// parseOffset reads a query parameter's values as one byte offset: decimal digits only (no
// sign), at most 18 of them, so it cannot overflow.
func parseOffset(v []string) (int64, bool) {
	if len(v) != 1 || v[0] == "" || len(v[0]) > 18 {
		return 0, false
	}
	for _, c := range []byte(v[0]) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	return n, err == nil
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// logWriter writes one log response: the JSON envelope by hand, the log's bytes escaped into
// it window by window.
type logWriter struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	e       *domain.Execution
	bw      *bufio.Writer
	js      jsonString
	started bool // the status and the envelope's start are written
}

// copy writes the log from byte offset from, at most limit bytes (limit < 0: to its end), after
// prefix. It returns the log bytes read and whether the log's end was reached.
func (lw *logWriter) copy(prefix string, from, limit int64) (n int64, atEnd bool, err error) {
	buf := make([]byte, 0, logWindowBytes)
	rc := http.NewResponseController(lw.w)
	for limit < 0 || n < limit {
		want := int64(logWindowBytes)
		if limit >= 0 {
			want = min(want, limit-n)
		}
		buf = buf[:0]
		got, err := lw.s.executions.ReadLog(lw.r.Context(), principalFrom(lw.r), lw.e, from+n, want, func(p []byte) error {
			buf = append(buf, p...)
			return nil
		})
		if err != nil {
			return n, false, err
		}
		if !lw.started {
			lw.start(prefix)
		}
		_ = rc.SetWriteDeadline(time.Now().Add(logWriteWait)) // unsupported only in tests' recorders
		if err := lw.js.write(buf); err != nil {
			return n, false, err
		}
		n += got
		if got < want {
			return n, true, nil
		}
	}
	if !lw.started {
		lw.start(prefix)
	}
	return n, false, nil
}

func (lw *logWriter) start(prefix string) {
	lw.started = true
	lw.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	lw.w.WriteHeader(http.StatusOK)
	lw.bw = bufio.NewWriterSize(lw.w, 32<<10)
	lw.js.w = lw.bw
	lw.bw.WriteString(prefix)
}

func (lw *logWriter) finish(suffix string) {
	lw.bw.WriteString(suffix)
	if err := lw.bw.Flush(); err != nil {
		lw.s.log.Debug("writing a log response failed", "task", lw.e.TaskID, "err", err)
	}
}

// failed answers an error: as an error response when nothing was written yet; otherwise the
// connection is cut, so the client sees a broken response rather than a short log.
func (lw *logWriter) failed(err error) {
	if !lw.started {
		lw.s.fail(lw.w, lw.r, err, "Failed to fetch logs")
		return
	}
	if lw.r.Context().Err() == nil && !errors.Is(err, errClientWrite) {
		lw.s.log.LogAttrs(lw.r.Context(), slog.LevelError, "streaming a log failed", slog.String("task", lw.e.TaskID), slog.String("err", err.Error()))
	}
	panic(http.ErrAbortHandler)
}

// errClientWrite marks a failed write to the client (gone, or too slow), not worth an error log.
var errClientWrite = errors.New("writing to the client failed")

// jsonString writes bytes as the inside of a JSON string, exactly as encoding/json encodes the
// whole text as one string: invalid UTF-8 becomes U+FFFD; <, >, & and U+2028/U+2029 are
// escaped. A character cut between two writes is held back and completed by the next.
type jsonString struct {
	w    *bufio.Writer
	held [utf8.UTFMax]byte
	n    int // bytes held
}

func (j *jsonString) write(p []byte) error {
	if j.n > 0 {
		var scratch [2 * utf8.UTFMax]byte
		t := append(append(scratch[:0], j.held[:j.n]...), p[:min(len(p), utf8.UTFMax)]...)
		c := j.encode(t)
		if c < j.n {
			// Still an incomplete character, so t holds all of p (a partial character is
			// shorter than UTFMax).
			j.n = copy(j.held[:], t[c:])
			return j.err()
		}
		p = p[c-j.n:]
		j.n = 0
	}
	c := j.encode(p)
	j.n = copy(j.held[:], p[c:])
	return j.err()
}

// err reports a failed write to the client: bufio keeps the first error, and an empty Write
// returns it.
func (j *jsonString) err() error {
	if _, err := j.w.Write(nil); err != nil {
		return errors.Join(errClientWrite, err)
	}
	return nil
}

// flushHeld writes the held bytes as they are: at the log's end they are invalid UTF-8.
func (j *jsonString) flushHeld() {
	for _, b := range j.held[:j.n] {
		j.escapeByte(b)
	}
	j.n = 0
}

// dropHeld forgets the held bytes and returns how many there were.
func (j *jsonString) dropHeld() int {
	n := j.n
	j.n = 0
	return n
}

// encode writes the characters of p and returns the bytes consumed: all of p but a trailing
// incomplete (yet so far valid) UTF-8 sequence.
func (j *jsonString) encode(p []byte) int {
	const hex = "0123456789abcdef"
	start := 0
	i := 0
	for i < len(p) {
		b := p[i]
		if b < utf8.RuneSelf {
			if htmlSafe(b) {
				i++
				continue
			}
			j.w.Write(p[start:i])
			j.escapeByte(b)
			i++
			start = i
			continue
		}
		if !utf8.FullRune(p[i:]) {
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			j.w.Write(p[start:i])
			j.w.WriteString(`\ufffd`)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			j.w.Write(p[start:i])
			j.w.WriteString(`\u202`)
			j.w.WriteByte(hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	j.w.Write(p[start:i])
	return i
}

// escapeByte writes one byte that is not plain text: an escaped ASCII character, or an invalid
// UTF-8 byte as U+FFFD.
func (j *jsonString) escapeByte(b byte) {
	const hex = "0123456789abcdef"
	switch {
	case b >= utf8.RuneSelf:
		j.w.WriteString(`\ufffd`)
	case htmlSafe(b):
		j.w.WriteByte(b)
	case b == '"' || b == '\\':
		j.w.WriteByte('\\')
		j.w.WriteByte(b)
	case b == '\b':
		j.w.WriteString(`\b`)
	case b == '\f':
		j.w.WriteString(`\f`)
	case b == '\n':
		j.w.WriteString(`\n`)
	case b == '\r':
		j.w.WriteString(`\r`)
	case b == '\t':
		j.w.WriteString(`\t`)
	default: // other control characters, and <, > and & as encoding/json escapes them
		j.w.WriteString(`\u00`)
		j.w.WriteByte(hex[b>>4])
		j.w.WriteByte(hex[b&0xF])
	}
}

// htmlSafe reports an ASCII byte that encoding/json writes as it is.
func htmlSafe(b byte) bool {
	return b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
}

// logSource is the run whose log (or report) a route reads: the run named by the path, or with
// ?shard=N the record of its N-th container (a shard, 1..shardTotal, or a retry container
// after them), whose own log and status it is. It answers the run's taskId and the shard (0:
// none). A run that is not sharded, or a shard it does not have, is 404.
func (s *Server) logSource(r *http.Request, p *identity.Principal) (*domain.Execution, string, int, error) {
	e, err := s.executions.GetListed(r.Context(), p, r.PathValue("taskId"))
	if err != nil {
		return nil, "", 0, err
	}
	v, has := r.URL.Query()["shard"]
	if !has {
		return e, e.TaskID, 0, nil
	}
	n, ok := parseOffset(v)
	if !ok || n < 1 || n > 1<<16 {
		return nil, "", 0, domain.BadRequest("Validation error", "shard must be one whole number from 1")
	}
	if !e.Sharded() {
		return nil, "", 0, domain.NotFound("Shard not found", "The run "+e.TaskID+" is not sharded")
	}
	c, err := s.executions.GetListed(r.Context(), p, domain.ShardTaskID(e.TaskID, int(n)))
	var de *domain.Error
	if errors.As(err, &de) && de.Kind == domain.KindNotFound {
		return nil, "", 0, domain.NotFound("Shard not found", fmt.Sprintf("The run %s has no shard %d", e.TaskID, n))
	}
	if err != nil {
		return nil, "", 0, err
	}
	return c, e.TaskID, int(n), nil
}
