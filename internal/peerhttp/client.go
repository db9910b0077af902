package peerhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
)

// ClientDeps configure a Client. URL, Secret, Name and Slots are required.
type ClientDeps struct {
	URL     string // the server's base URL (http(s)://host[:port])
	Secret  string // VERDICT_RUNNER_SECRET
	Name    string
	Slots   int
	Backend string       // ["docker"]
	HTTP    *http.Client // [a client without an overall timeout: /next long-polls, uploads stream]
	Log     *slog.Logger
	// Backoff is the first wait before a retry [200ms]; it doubles up to MaxBackoff [5s].
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Client is run.Peer over HTTP. Calls that only report (Extend, Log, Started, Done) are retried
// on network errors and on 502, 503 and 504 answers, with backoff, for as long as the run's lease
// would last since its last renewal (a server restart loses no run); a refusal (4xx) is not
// retried. After that the call fails with run.ErrUnavailable, and the runner (run.Runner) keeps
// what it reported and calls again, until the server answers or says the lease is lost (409):
// the server does not count an outage of its own against the runner's leases. Log returns once
// the server has stored the chunk, so a slow server slows the log pump instead of piling chunks
// up. Upload streams its archive once (a stream cannot be replayed): one that fails so is
// run.ErrUnavailable, and the runner uploads again, the archive copied afresh.
type Client struct {
	base    string
	secret  string
	name    string
	slots   string
	backend string
	http    *http.Client
	log     *slog.Logger
	backoff time.Duration
	maxWait time.Duration
	// instance tells this process from another runner of the same name: the server binds the
	// runs this process claims to it (128 random bits, drawn once per process).
	instance string

	mu     sync.Mutex
	leases map[string]time.Time // by run: when the lease runs out, as of the last renewal
	ending map[string]bool      // runs being settled (Done): no longer asked about cancels
}

// NewClient checks d and builds the client.
func NewClient(d ClientDeps) (*Client, error) {
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL: want http(s)://host[:port], got %q", d.URL)
	}
	if d.Secret == "" {
		return nil, errors.New("the runner secret is empty")
	}
	if !nameRe.MatchString(d.Name) {
		return nil, fmt.Errorf("runner name %q: want 1 to 63 letters, digits, '.', '_' or '-'", d.Name)
	}
	if d.Slots < 1 || d.Slots > 256 {
		return nil, errors.New("runner slots: want 1..256")
	}
	if d.Backend == "" {
		d.Backend = "docker"
	}
	if d.HTTP == nil {
		d.HTTP = &http.Client{Transport: http.DefaultTransport}
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Backoff <= 0 {
		d.Backoff = 200 * time.Millisecond
	}
	if d.MaxBackoff <= 0 {
		d.MaxBackoff = 5 * time.Second
	}
	return &Client{base: strings.TrimRight(d.URL, "/"), secret: d.Secret, name: d.Name, slots: strconv.Itoa(d.Slots),
		backend: d.Backend, http: d.HTTP, log: d.Log, backoff: d.Backoff, maxWait: d.MaxBackoff,
		instance: domain.RandomHex(16), leases: map[string]time.Time{}, ending: map[string]bool{}}, nil
}

var _ run.Peer = (*Client)(nil)

// ErrNameInUse: another runner process of the same name is connected to the server.
var ErrNameInUse = errors.New("runner name in use")

// nameInUse is the error title of the server's refusal.
const nameInUse = "Runner name in use"

// Hello asks the server for the runner's name, before the runner touches anything of its
// own: ErrNameInUse while another process holds the name.
func (c *Client) Hello(ctx context.Context) error {
	resp, err := c.call(ctx, Prefix+"hello", "application/json", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// statusError is an answer the server refused with.
type statusError struct {
	status  int
	message string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("the server answered %d: %s", e.status, e.message)
}

// retryable: the server could not be reached or is restarting. Its answers (a lost lease, a
// name in use, a refusal) are not asked again.
func retryable(err error) bool {
	var se *statusError
	switch {
	case errors.As(err, &se):
		return se.status == http.StatusBadGateway || se.status == http.StatusServiceUnavailable || se.status == http.StatusGatewayTimeout
	case errors.Is(err, run.ErrLeaseLost), errors.Is(err, ErrNameInUse):
		return false
	}
	return err != nil
}

// unavailable marks err run.ErrUnavailable when it is one retryable says: the server could not
// be reached or could not reach its database.
func unavailable(err error) error {
	if retryable(err) && !errors.Is(err, run.ErrUnavailable) {
		return fmt.Errorf("%w: %w", run.ErrUnavailable, err)
	}
	return err
}

// call sends one request and returns the answer, its status checked: 2xx is returned, 409 is
// run.ErrLeaseLost, anything else a *statusError.
func (c *Client) call(ctx context.Context, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.secret)
	req.Header.Set(HeaderRunner, c.name)
	req.Header.Set(HeaderSlots, c.slots)
	req.Header.Set(HeaderBackend, c.backend)
	req.Header.Set(HeaderInstance, c.instance)
	// Every run held counts, those being settled too (the runner keeps their slots until
	// settled), but for a Done request's own run: the answer settles it.
	c.mu.Lock()
	busy := len(c.leases)
	if id, ok := ctx.Value(settlingKey{}).(string); ok && c.ending[id] {
		busy--
	}
	c.mu.Unlock()
	req.Header.Set(HeaderBusy, strconv.Itoa(busy))
	req.Header.Set("Content-Type", contentType)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	var eb errorBody
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusConflict {
		if json.Unmarshal(raw, &eb) == nil && eb.Error == nameInUse {
			return nil, fmt.Errorf("%w: %s", ErrNameInUse, eb.Message)
		}
		return nil, run.ErrLeaseLost
	}
	if json.Unmarshal(raw, &eb) != nil || eb.Message == "" {
		eb.Message = strings.TrimSpace(string(raw))
		if len(eb.Message) > 200 {
			eb.Message = eb.Message[:200]
		}
	}
	return nil, &statusError{status: resp.StatusCode, message: eb.Message}
}

// callJSON posts in as JSON and decodes the answer into out (nil: none expected), retrying
// for run id's lease (id "": no retry).
func (c *Client) callJSON(ctx context.Context, id, path string, in, out any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a result's tests are full of < and >: six bytes each escaped
	if err := enc.Encode(in); err != nil {
		return err
	}
	body := buf.Bytes()
	wait := c.backoff
	for {
		resp, err := c.call(ctx, path, "application/json", bytes.NewReader(body))
		if err == nil {
			defer resp.Body.Close()
			if out == nil || resp.StatusCode == http.StatusNoContent {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
				return nil
			}
			return json.NewDecoder(resp.Body).Decode(out)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if id == "" || !retryable(err) {
			return err
		}
		if time.Now().Add(wait).After(c.leaseEnd(id)) {
			return fmt.Errorf("the server did not answer while the run's lease lasted: %w", unavailable(err))
		}
		c.log.Warn("the server did not answer; retrying", "path", path, "in", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(wait*2, c.maxWait)
	}
}

// renewed records that run id's lease lasts lease from now. extending: a renewal of a run
// held already, which a Done that settled the run meanwhile must not bring back.
func (c *Client) renewed(id string, lease time.Duration, extending bool) {
	c.mu.Lock()
	if _, held := c.leases[id]; held || !extending {
		c.leases[id] = time.Now().Add(lease)
	}
	c.mu.Unlock()
}

// leaseEnd is when run id's lease runs out as this client last renewed it.
func (c *Client) leaseEnd(id string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leases[id]
}

func runPath(id, what string) string { return Prefix + "runs/" + url.PathEscape(id) + "/" + what }

func seconds(d time.Duration) int { return max(1, int((d+time.Second-1)/time.Second)) }

// Next long-polls the server for a run (up to about 25 s); nil, nil: none came.
func (c *Client) Next(ctx context.Context, lease time.Duration) (*run.Work, error) {
	// One claim for every try: when an answer is lost after the server claimed a run, the
	// next try gets that run rather than leaving it to wait out its lease. Tries go on for half
	// the lease.
	body, err := json.Marshal(nextBody{LeaseSeconds: seconds(lease), Claim: domain.RandomHex(8)})
	if err != nil {
		return nil, err
	}
	giveUp := time.Now().Add(lease / 2)
	wait := c.backoff
	for {
		w, err := c.next(ctx, body)
		if err == nil {
			if w != nil {
				c.renewed(w.ID, lease, false)
			}
			return w, nil
		}
		if ctx.Err() != nil || !retryable(err) || time.Now().Add(wait).After(giveUp) {
			return nil, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait = min(2*wait, c.maxWait)
	}
}

// next is one try of Next.
func (c *Client) next(ctx context.Context, body []byte) (*run.Work, error) {
	resp, err := c.call(ctx, Prefix+"next", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil, nil
	}
	var j workJSON
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		return nil, fmt.Errorf("reading the claimed run: %w", err) // retryable: the answer broke off
	}
	return j.work(), nil
}

// WatchCancels long-polls the server for cancels of the runs this runner holds and calls
// cancel with each, until ctx ends: a cancel arrives within about a second rather than at the
// next heartbeat. It waits while the runner holds no run.
func (c *Client) WatchCancels(ctx context.Context, cancel func(id string)) {
	wait := c.backoff
	told := map[string]bool{} // runs cancelled already: they stay held until settled
	for ctx.Err() == nil {
		all := c.held()
		var held []string
		for _, id := range all {
			if !told[id] {
				held = append(held, id)
			}
		}
		for id := range told {
			if !slices.Contains(all, id) {
				delete(told, id) // settled
			}
		}
		if len(held) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		var a cancelsAnswer
		err := c.callJSON(ctx, "", Prefix+"cancels", cancelsBody{Runs: held}, &a)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Debug("asking for cancels failed; the heartbeats still bring them", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, c.maxWait)
			continue
		}
		wait = c.backoff
		for _, id := range a.Cancelled {
			told[id] = true
			cancel(id)
		}
	}
}

// held lists the runs this runner holds and is not settling.
func (c *Client) held() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id := range c.leases {
		if !c.ending[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

func (c *Client) Extend(ctx context.Context, id string, lease time.Duration) (bool, error) {
	var a extendAnswer
	if err := c.callJSON(ctx, id, runPath(id, "extend"), leaseBody{LeaseSeconds: seconds(lease)}, &a); err != nil {
		return false, err
	}
	c.renewed(id, lease, true)
	return a.Cancelled, nil
}

func (c *Client) Started(ctx context.Context, id, containerID string) error {
	return c.callJSON(ctx, id, runPath(id, "started"), startedBody{ContainerID: containerID}, nil)
}

// Log sends one chunk and returns once the server stored it (a chunk sent twice, after an
// answer was lost, is stored once: the server knows it by its seq).
func (c *Client) Log(ctx context.Context, id string, seq int, offset int64, chunk string) error {
	return c.callJSON(ctx, id, runPath(id, "log"), logBody{Seq: seq, Offset: offset, Chunk: chunk}, nil)
}

// Upload streams archive to the server as the request's body, once: a network error or a
// 502, 503 or 504 answer is run.ErrUnavailable (the caller uploads again from a new archive).
func (c *Client) Upload(ctx context.Context, id string, archive io.Reader) (run.Reports, error) {
	resp, err := c.call(ctx, runPath(id, "upload"), "application/x-tar", io.NopCloser(archive))
	if err != nil {
		return run.Reports{}, unavailable(err)
	}
	defer resp.Body.Close()
	var j reportsJSON
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		return run.Reports{}, unavailable(fmt.Errorf("reading the stored reports: %w", err))
	}
	return j.reports(), nil
}

// settlingKey marks a Done request's context with its run's ID.
type settlingKey struct{}

// doneTime bounds Done: the post-run chain's analysis (90 s) and writes.
const doneTime = 5 * time.Minute

// Done settles the run. It goes on when ctx was cancelled (a cancelled run is settled too),
// within doneTime. When the server could not be reached (run.ErrUnavailable) the run stays
// held, its lease renewed, for the runner's next Done.
func (c *Client) Done(ctx context.Context, id string, res run.Result) error {
	dctx, cancel := context.WithTimeout(context.WithValue(context.WithoutCancel(ctx), settlingKey{}, id), doneTime)
	defer cancel()
	c.mu.Lock()
	if _, held := c.leases[id]; held {
		c.ending[id] = true
	}
	c.mu.Unlock()
	err := c.callJSON(dctx, id, runPath(id, "done"), resultToJSON(res), nil)
	if err != nil && errors.Is(dctx.Err(), context.DeadlineExceeded) {
		err = unavailable(err) // the server did not answer within doneTime
	}
	if !errors.Is(err, run.ErrUnavailable) {
		c.mu.Lock()
		delete(c.leases, id)
		delete(c.ending, id)
		c.mu.Unlock()
	}
	return err
}
