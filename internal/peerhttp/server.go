package peerhttp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
)

// ServerDeps are what the runner routes need. Secret empty: every route answers 404.
type ServerDeps struct {
	Secret string
	// Peer is the control plane's door for one process of a runner ID, instance (the random ID
	// the process sends in HeaderInstance; control.Plane.InstancePeer): the runs it claims are
	// bound to that process, and its calls about another process's runs are refused.
	Peer  func(runnerID, instance string) run.RemotePeer
	Clock domain.Clock
	Log   *slog.Logger
	// Wait bounds a /next long-poll [25s]; Poll is how often it looks for work when not woken [1s].
	Wait time.Duration
	Poll time.Duration
	// Registry keeps the runners heard from [this replica's memory].
	Registry Registry
	// Cancelled tells which of ids, runs held by process instance of runner runnerID, a user
	// asked to cancel; nil: runners hear of cancels only from their heartbeats.
	Cancelled func(ctx context.Context, runnerID, instance string, ids []string) ([]string, error)
}

// Server serves the runner routes and remembers, in memory, the runners that called them.
type Server struct {
	secret [sha256.Size]byte
	on     bool
	peer   func(runnerID, instance string) run.RemotePeer
	clock  domain.Clock
	log    *slog.Logger
	wait   time.Duration
	poll   time.Duration
	mux    *http.ServeMux

	registry  Registry
	cancelled func(ctx context.Context, runnerID, instance string, ids []string) ([]string, error)

	mu        sync.Mutex
	peers     map[peerKey]*peerEntry // by runner ID and process instance
	published map[string]published   // by runner name: what was last told the registry
	wake      chan struct{}          // closed by Notify, then replaced
	// cancelWake is closed by NotifyCancel (then replaced): a cancel was asked on this replica.
	cancelWake chan struct{}
}

// peerKey names one process of a runner: its runner ID and instance.
type peerKey struct{ runnerID, instance string }

// peerEntry is a process's door to the control plane, and when it last called.
type peerEntry struct {
	peer run.RemotePeer
	used time.Time
}

// peerIdle is how long a process's door is kept after its last call: longer than any lease
// (600 s at most), so a runner's held runs are remembered while it may still report on them;
// the doors of processes gone (a runner restarts as a new instance) are dropped after it.
const peerIdle = 15 * time.Minute

// published is what the registry was last told of a runner, and when.
type published struct {
	state runnerState
	at    time.Time
}

// runnerState is what of a runner's call is worth telling the registry when it changes.
type runnerState struct {
	instance, backend string
	slots, busy       int
}

// Runner is a remote runner heard from recently.
type Runner struct {
	ID         string
	Name       string
	Backend    string
	Slots      int
	Busy       int
	LastSeenAt time.Time
}

// seenWithin is how recently a runner must have called to be listed.
const seenWithin = time.Minute

// nameHeldFor is how long a runner's name stays its own after its last call: a live runner
// calls at least every 25 s (its long-polls), so another process asking for the name within
// this is refused, and a runner restarted under its name waits at most this long.
const nameHeldFor = 40 * time.Second

// publishEvery bounds how often the routes tell the registry of a runner whose state did not
// change: log chunks come many a second, and each need not cost a Redis write.
const publishEvery = 5 * time.Second

// RunnerID is the runner ID (executions' runner_id) of the remote runner name.
func RunnerID(name string) string { return "remote:" + name }

// NewServer builds the runner routes.
func NewServer(d ServerDeps) *Server {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Wait <= 0 {
		d.Wait = 25 * time.Second
	}
	if d.Poll <= 0 {
		d.Poll = time.Second
	}
	if d.Registry == nil {
		d.Registry = newMemoryRegistry()
	}
	s := &Server{secret: sha256.Sum256([]byte(d.Secret)), on: d.Secret != "", peer: d.Peer, clock: d.Clock, log: d.Log,
		wait: d.Wait, poll: d.Poll, mux: http.NewServeMux(), registry: d.Registry, peers: map[peerKey]*peerEntry{},
		published: map[string]published{}, wake: make(chan struct{}),
		cancelled: d.Cancelled, cancelWake: make(chan struct{})}
	s.mux.HandleFunc("POST /api/runner/hello", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s.mux.HandleFunc("POST /api/runner/next", s.next)
	s.mux.HandleFunc("POST /api/runner/cancels", s.cancels)
	s.mux.HandleFunc("POST /api/runner/runs/{id}/extend", s.extend)
	s.mux.HandleFunc("POST /api/runner/runs/{id}/started", s.started)
	s.mux.HandleFunc("POST /api/runner/runs/{id}/log", s.appendLog)
	s.mux.HandleFunc("POST /api/runner/runs/{id}/upload", s.upload)
	s.mux.HandleFunc("POST /api/runner/runs/{id}/done", s.done)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not found", "No such route: "+r.Method+" "+r.URL.Path)
	})
	return s
}

// Notify wakes the long-polls waiting in /next: a run was queued or a slot freed.
func (s *Server) Notify() {
	s.mu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// Runners lists the runners heard from in the last minute, by name: every replica's callers
// when the registry is shared.
func (s *Server) Runners(ctx context.Context) ([]Runner, error) {
	return s.registry.List(ctx, s.clock().Add(-seenWithin))
}

// Authentic reports whether token is the runner secret, compared in constant time; false
// when the server has none. The runners' operator presents it too (GET /api/runners).
func (s *Server) Authentic(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return s.on && subtle.ConstantTimeCompare(sum[:], s.secret[:]) == 1
}

type ctxKey struct{}

// caller is the runner a request comes from.
type caller struct {
	name     string
	peer     run.RemotePeer
	runner   Runner // as its request describes it
	instance string
}

func callerOf(r *http.Request) caller { return r.Context().Value(ctxKey{}).(caller) }

var (
	nameRe     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	backendRe  = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	instanceRe = regexp.MustCompile(`^[0-9a-f]{1,32}$`)
)

// ServeHTTP authenticates the runner, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.on {
		writeError(w, http.StatusNotFound, "Not found", "No such route: "+r.Method+" "+r.URL.Path)
		return
	}
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || !s.Authentic(token) {
		writeError(w, http.StatusUnauthorized, "Authentication required", "A runner authenticates with the server's runner secret")
		return
	}
	name := r.Header.Get(HeaderRunner)
	slots, err := strconv.Atoi(r.Header.Get(HeaderSlots))
	backend := r.Header.Get(HeaderBackend)
	if backend == "" {
		backend = "docker"
	}
	switch {
	case !nameRe.MatchString(name):
		writeError(w, http.StatusBadRequest, "Validation error", HeaderRunner+" must name the runner (1 to 63 letters, digits, '.', '_' or '-')")
		return
	case err != nil || slots < 1 || slots > 256:
		writeError(w, http.StatusBadRequest, "Validation error", HeaderSlots+" must be a whole number from 1 to 256")
		return
	case !backendRe.MatchString(backend):
		writeError(w, http.StatusBadRequest, "Validation error", HeaderBackend+" must be a backend name")
		return
	}
	// The instance tells this process from any other presenting the same name and secret: the
	// runs it claims are bound to it (ServerDeps.Peer), so it is required.
	instance := r.Header.Get(HeaderInstance)
	busy, berr := strconv.Atoi(r.Header.Get(HeaderBusy))
	switch {
	case !instanceRe.MatchString(instance):
		writeError(w, http.StatusBadRequest, "Validation error", HeaderInstance+" must be 1 to 32 lower-case hex digits, random for each runner process")
		return
	case r.Header.Get(HeaderBusy) == "":
		busy = 0
	case berr != nil || busy < 0 || busy > 1<<16:
		writeError(w, http.StatusBadRequest, "Validation error", HeaderBusy+" must be a whole number of runs")
		return
	}
	// A runner asking for its name or for work is refused while another process holds the
	// name; the other routes only carry on runs it already has.
	claiming := r.URL.Path == Prefix+"hello" || r.URL.Path == Prefix+"next"
	rn := Runner{ID: RunnerID(name), Name: name, Backend: backend, Slots: slots, Busy: busy, LastSeenAt: s.clock()}
	if s.hear(r.Context(), rn, instance, claiming) && claiming {
		writeError(w, http.StatusConflict, nameInUse,
			"Another runner process named "+name+" is connected; give every runner its own VERDICT_RUNNER_NAME "+
				"(a runner restarted under its old name waits until the old process has been silent for "+nameHeldFor.String()+")")
		return
	}
	p := s.peerOf(peerKey{runnerID: RunnerID(name), instance: instance}, rn.LastSeenAt)
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, caller{name: name, peer: p, runner: rn, instance: instance})))
}

// peerOf is the door of process k, made on its first call; making one drops those unused for
// peerIdle (new ones come only when a runner process starts, so this costs nothing per call).
func (s *Server) peerOf(k peerKey, now time.Time) run.RemotePeer {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.peers[k]
	if e == nil {
		for old, o := range s.peers {
			if now.Sub(o.used) >= peerIdle {
				delete(s.peers, old)
			}
		}
		e = &peerEntry{peer: s.peer(k.runnerID, k.instance)}
		s.peers[k] = e
	}
	e.used = now
	return e.peer
}

// hear tells the registry of a runner's call: always when it is claiming (the name must be
// checked), else when its state changed or publishEvery has passed. It reports whether another
// process holds the name. A registry that fails is logged and does not stop the runner.
func (s *Server) hear(ctx context.Context, rn Runner, instance string, claiming bool) (taken bool) {
	state := runnerState{instance: instance, backend: rn.Backend, slots: rn.Slots, busy: rn.Busy}
	s.mu.Lock()
	last := s.published[rn.Name]
	due := claiming || last.state != state || rn.LastSeenAt.Sub(last.at) >= publishEvery
	if due {
		s.published[rn.Name] = published{state: state, at: rn.LastSeenAt}
	}
	s.mu.Unlock()
	if !due {
		return false
	}
	taken, err := s.registry.Heard(ctx, rn, instance, rn.LastSeenAt.Add(-nameHeldFor))
	if err != nil {
		s.log.Warn("recording a runner's call failed", "runner", rn.Name, "err", err)
		return false
	}
	if taken {
		s.mu.Lock()
		delete(s.published, rn.Name) // ask again next time
		s.mu.Unlock()
	}
	return taken
}

const maxJSONBytes = 4 << 20 // a log chunk is at most a few tens of KiB; a result, its tests

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data")
	}
	if field, unknown := strings.CutPrefix(fmt.Sprint(err), "json: unknown field "); unknown {
		writeError(w, http.StatusBadRequest, "Invalid request", "Unknown field "+field)
		return false
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON", "The request body is not valid JSON")
		return false
	}
	return true
}

func leaseOf(w http.ResponseWriter, b leaseBody) (time.Duration, bool) {
	if b.LeaseSeconds < 1 || b.LeaseSeconds > 600 {
		writeError(w, http.StatusBadRequest, "Validation error", "leaseSeconds must be from 1 to 600")
		return 0, false
	}
	return time.Duration(b.LeaseSeconds) * time.Second, true
}

func runID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if id == "" || len(id) > 64 {
		writeError(w, http.StatusBadRequest, "Validation error", "The run ID is malformed")
		return "", false
	}
	return id, true
}

// fail answers a Peer's error: a lost lease is 409; the control plane unavailable (its
// database does not answer) is 503 with Retry-After, which the runner retries, keeping what it
// reported; anything else 500 (logged). A run another process claimed (another instance, even
// of the same name) is a lost lease to this one.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, op string) {
	switch {
	case errors.Is(err, run.ErrLeaseLost):
		writeError(w, http.StatusConflict, "Lease lost", "This runner process does not hold the run (its lease ran out, or another process claimed it)")
		return
	case errors.Is(err, run.ErrUnavailable), errors.Is(err, domain.ErrUnavailable):
		if r.Context().Err() == nil {
			s.log.Debug("runner request failed: the control plane is unavailable", "op", op, "runner", callerOf(r).name, "err", err)
		}
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "Service unavailable",
			"The server cannot reach its database; keep what you report and try again")
		return
	}
	if r.Context().Err() == nil {
		s.log.Error("runner request failed", "op", op, "runner", callerOf(r).name, "err", err)
	}
	writeError(w, http.StatusInternalServerError, op, "An internal error occurred; it has been logged")
}

// next claims a run for the runner, waiting up to Wait for one.
func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	var b nextBody
	if !decode(w, r, &b) {
		return
	}
	lease, ok := leaseOf(w, leaseBody{LeaseSeconds: b.LeaseSeconds})
	if !ok {
		return
	}
	if b.Claim != "" && !instanceRe.MatchString(b.Claim) {
		writeError(w, http.StatusBadRequest, "Validation error", "claim must be up to 32 lower-case hex digits")
		return
	}
	c := callerOf(r)
	ctx := r.Context()
	if b.Claim != "" {
		// A repeated ask (its answer was lost) gets the run it claimed, from the store, once
		// per request rather than at every poll.
		work, err := c.peer.Claimed(ctx, b.Claim)
		if err != nil {
			s.fail(w, r, err, "Failed to claim a run")
			return
		}
		if work != nil {
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusOK, workToJSON(work))
			return
		}
	}
	var work *run.Work
	var err error
	found := s.longPoll(ctx, func() *chan struct{} { return &s.wake }, func() bool {
		work, err = c.peer.NextClaim(ctx, lease, b.Claim)
		return err != nil || work != nil
	})
	switch {
	case err != nil:
		s.fail(w, r, err, "Failed to claim a run")
	case !found && ctx.Err() == nil:
		w.WriteHeader(http.StatusNoContent)
	case found:
		// The runner holds one more run from now, before its next call says so.
		rn := c.runner
		rn.Busy++
		s.hear(ctx, rn, c.instance, true)
		w.Header().Set("Cache-Control", "no-store") // it holds the run's variables
		writeJSON(w, http.StatusOK, workToJSON(work))
	}
}

// longPoll calls try until it reports done, again each time the channel wake points to is
// closed (Notify, NotifyCancel) or Poll passes, for at most Wait. It reports whether try was
// done; false when Wait passed or the request ended.
func (s *Server) longPoll(ctx context.Context, wake func() *chan struct{}, try func() bool) bool {
	deadline := time.NewTimer(s.wait)
	defer deadline.Stop()
	poll := time.NewTicker(s.poll)
	defer poll.Stop()
	for {
		s.mu.Lock()
		woken := *wake()
		s.mu.Unlock()
		if try() {
			return true
		}
		select {
		case <-woken:
		case <-poll.C:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// NotifyCancel wakes the cancel long-polls at once: a user asked to cancel a run.
func (s *Server) NotifyCancel() {
	s.mu.Lock()
	close(s.cancelWake)
	s.cancelWake = make(chan struct{})
	s.mu.Unlock()
}

// maxHeld bounds the runs one cancels request asks about (a runner holds at most 256 slots'
// worth, plus runs being settled).
const maxHeld = 1024

// cancels answers, as soon as a user cancels one of them (or after Wait), which of the runs the
// runner holds were cancelled: a remote runner hears of a cancel within about a second instead
// of at its next heartbeat. Other replicas' cancels are seen by looking every Poll.
func (s *Server) cancels(w http.ResponseWriter, r *http.Request) {
	var b cancelsBody
	if !decode(w, r, &b) {
		return
	}
	if len(b.Runs) > maxHeld {
		writeError(w, http.StatusBadRequest, "Validation error", fmt.Sprintf("runs: at most %d", maxHeld))
		return
	}
	c := callerOf(r)
	ctx := r.Context()
	var ids []string
	var err error
	s.longPoll(ctx, func() *chan struct{} { return &s.cancelWake }, func() bool {
		if s.cancelled != nil && len(b.Runs) > 0 {
			ids, err = s.cancelled(ctx, RunnerID(c.name), c.instance, b.Runs)
		}
		return err != nil || len(ids) > 0
	})
	switch {
	case err != nil:
		s.fail(w, r, err, "Failed to read cancels")
	case ctx.Err() == nil:
		if ids == nil {
			ids = []string{}
		}
		writeJSON(w, http.StatusOK, cancelsAnswer{Cancelled: ids})
	}
}

func (s *Server) extend(w http.ResponseWriter, r *http.Request) {
	id, ok := runID(w, r)
	var b leaseBody
	if !ok || !decode(w, r, &b) {
		return
	}
	lease, ok := leaseOf(w, b)
	if !ok {
		return
	}
	c := callerOf(r)
	cancelled, err := c.peer.Extend(r.Context(), id, lease)
	if err != nil {
		s.fail(w, r, err, "Failed to extend the lease")
		return
	}
	writeJSON(w, http.StatusOK, extendAnswer{Cancelled: cancelled})
}

func (s *Server) started(w http.ResponseWriter, r *http.Request) {
	id, ok := runID(w, r)
	var b startedBody
	if !ok || !decode(w, r, &b) {
		return
	}
	if b.ContainerID == "" || len(b.ContainerID) > 256 {
		writeError(w, http.StatusBadRequest, "Validation error", "containerId must be 1 to 256 characters")
		return
	}
	if err := callerOf(r).peer.Started(r.Context(), id, b.ContainerID); err != nil {
		s.fail(w, r, err, "Failed to record the container")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) appendLog(w http.ResponseWriter, r *http.Request) {
	id, ok := runID(w, r)
	var b logBody
	if !ok || !decode(w, r, &b) {
		return
	}
	if b.Seq < 1 || b.Offset < 0 || b.Chunk == "" {
		writeError(w, http.StatusBadRequest, "Validation error", "seq must be at least 1, offset at least 0, and chunk not empty")
		return
	}
	if err := callerOf(r).peer.Log(r.Context(), id, b.Seq, b.Offset, b.Chunk); err != nil {
		s.fail(w, r, err, "Failed to store log lines")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// uploadTime bounds the arrival of a report archive, which may take longer than the API's
// body timeout.
const uploadTime = 10 * time.Minute

// upload streams the request's body, a tar archive, to Peer.Upload: it is read as it arrives,
// never held whole.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	id, ok := runID(w, r)
	if !ok {
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(s.clock().Add(uploadTime))
	rep, err := callerOf(r).peer.Upload(r.Context(), id, r.Body)
	if err != nil {
		s.fail(w, r, err, "Failed to store the reports")
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)) // let the connection be reused
	writeJSON(w, http.StatusOK, reportsToJSON(rep))
}

func (s *Server) done(w http.ResponseWriter, r *http.Request) {
	id, ok := runID(w, r)
	var b resultJSON
	if !ok || !decode(w, r, &b) {
		return
	}
	switch b.Status {
	case domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError, domain.ExecCancelled:
	default:
		writeError(w, http.StatusBadRequest, "Validation error", "status must be a final status")
		return
	}
	if b.FinishedAt.IsZero() {
		b.FinishedAt = s.clock()
	}
	c := callerOf(r)
	if err := c.peer.Done(r.Context(), id, b.result()); err != nil {
		s.fail(w, r, err, "Failed to settle the run")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // a result's tests are full of < and >: six bytes each escaped
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Success: false, Error: code, Message: message})
}
