//go:build integration

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/api"
	"verdict/internal/app"
	"verdict/internal/config"
	"verdict/internal/store"
	"verdict/internal/testenv"
)

// harness is one Verdict on a real database behind a real HTTP server.
type harness struct {
	t     testing.TB
	app   *app.App
	srv   *httptest.Server
	clock *testenv.Clock

	mails     []store.Mail // the outbox as read so far (reading claims, so it is kept)
	mailReads int
	console   *consoleMails // what the mail worker sent, when it runs
}

// consoleMails keeps what the console mail sender writes.
type consoleMails struct {
	mu sync.Mutex
	b  strings.Builder
}

func (c *consoleMails) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.Write(p)
}

// lastTo is the text part of the newest mail sent to addr, "" for none.
func (c *consoleMails) lastTo(addr string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	text := ""
	for _, block := range strings.Split(c.b.String(), "===== end of e-mail =====") {
		if !strings.Contains(block, "\nTo: "+addr+"\n") {
			continue
		}
		if _, rest, ok := strings.Cut(block, "----- text/plain -----\n"); ok {
			text, _, _ = strings.Cut(rest, "----- text/html -----")
		}
	}
	return text
}

type harnessOpts struct {
	dialect    string // "sqlite" or "postgres"
	redis      bool
	rateLimits api.RateLimits // nil: generous limits, so tests other than the rate-limit ones never trip them
	env        map[string]string
	realClock  bool // runs: timestamps and leases on the real clock
	workers    bool // start the runner, reaper and mail sender
	lease      time.Duration
	// databaseURL shares a PostgreSQL database with another harness (two replicas), or reaches
	// one through a proxy the test can cut (testenv.Cutter).
	databaseURL string
	// log receives the service's log as JSON lines at info (nil: discarded).
	log io.Writer
	// redisPrefix shares Redis keys and channels with another harness (two replicas).
	redisPrefix string
	// followBuffer bounds each SSE follower's queue in bytes (0: the default).
	followBuffer int64
	// retention paces the retention job (with workers; 0: the default 10 minutes).
	retention time.Duration
	// eraseInterval paces the erase job (with workers; 0: the default minute).
	eraseInterval time.Duration
	// scheduleClock runs the schedules on a clock of their own (nil: the harness's);
	// scheduleInterval is their poll (with workers; 0: the default).
	scheduleClock    func() time.Time
	scheduleInterval time.Duration
}

func generousLimits() api.RateLimits { return limitsAt(100000) }

// limitsAt is the API's rate-limit buckets, each allowing n requests per window.
func limitsAt(n int) api.RateLimits {
	l := api.DefaultRateLimits()
	for k, r := range l {
		r.Limit = n
		l[k] = r
	}
	return l
}

// publicURL is the harness's VERDICT_PUBLIC_URL, the origin of report links.
const publicURL = "http://verdict.test"

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	// The whole server over HTTP, a few seconds a test: the full tier's. The short tier (go test
	// -short) checks the services' rules in their own packages.
	if testing.Short() {
		t.Skip("end-to-end through the whole server: the full tier (go test without -short) runs it")
	}
	env := map[string]string{
		"VERDICT_DATA_DIR":   t.TempDir(),
		"JWT_SECRET":         "test-secret-test-secret-test-secret-0123",
		"ENCRYPTION_KEY":     strings.Repeat("ab", 32),
		"VERDICT_PUBLIC_URL": publicURL,
		"VERDICT_LOG_LEVEL":  "error",
	}
	switch {
	case o.databaseURL != "":
		env["DATABASE_URL"] = o.databaseURL
	case o.dialect == "postgres":
		env["DATABASE_URL"] = testenv.PostgresDB(t)
	}
	if o.redis {
		env["REDIS_URL"] = testenv.RedisURL(t)
	}
	for k, v := range o.env {
		env[k] = v
	}
	cfg, err := config.LoadFrom(env)
	if err != nil {
		t.Fatal(err)
	}
	if o.rateLimits == nil {
		o.rateLimits = generousLimits()
	}
	c := testenv.NewClock(time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
	console := &consoleMails{}
	opts := app.Options{Clock: c.Now, RateLimits: o.rateLimits, Version: "test", Lease: o.lease, ReapInterval: 200 * time.Millisecond, MailConsole: console}
	if o.realClock {
		opts.Clock = func() time.Time { return time.Now().UTC() }
	}
	if o.redis {
		opts.RedisPrefix = testenv.KeyPrefix(t)
		if o.redisPrefix != "" {
			opts.RedisPrefix = o.redisPrefix
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.log != nil {
		logger = slog.New(slog.NewJSONHandler(o.log, nil))
	}
	opts.FollowBufferBytes = o.followBuffer
	opts.RetentionInterval = o.retention
	opts.EraseInterval = o.eraseInterval
	opts.ScheduleClock, opts.ScheduleInterval = o.scheduleClock, o.scheduleInterval
	a, err := app.New(context.Background(), cfg, logger, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.API)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if o.workers {
		go func() { a.Run(ctx); close(done) }()
	} else {
		close(done)
	}
	t.Cleanup(func() { cancel(); <-done; srv.Close(); a.Close() })
	return &harness{t: t, app: a, srv: srv, clock: c, console: console}
}

// forEachDB runs fn as subtests on SQLite and on PostgreSQL.
func forEachDB(t *testing.T, fn func(t *testing.T, h *harness)) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) { fn(t, newHarness(t, harnessOpts{dialect: d})) })
	}
}

// resp is a decoded JSON answer.
type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r resp) str(path ...string) string {
	v := r.get(path...)
	s, _ := v.(string)
	return s
}

func (r resp) get(path ...string) any {
	var v any = r.body
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// auth is how a request authenticates: a bearer token, an API key, or nothing.
type auth struct{ token, key string }

func bearer(tok string) auth { return auth{token: tok} }
func apiKey(k string) auth   { return auth{key: k} }

// sign sets a's credential on req, and the extra header name/value pairs hdr.
func (a auth) sign(req *http.Request, hdr ...string) {
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if a.key != "" {
		req.Header.Set("X-Api-Key", a.key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
}

var anon = auth{}

func (h *harness) do(method, path string, a auth, body any, hdr ...string) resp {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	a.sign(req, hdr...)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			h.t.Fatalf("%s %s: bad JSON %q: %v", method, path, raw, err)
		}
	}
	return out
}

// expect fails unless r has the status and, for errors, the API's error body with that text.
func expect(t testing.TB, r resp, status int, errText string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.raw)
	}
	if errText != "" {
		if r.body["success"] != false || r.str("error") != errText || r.str("message") == "" {
			t.Fatalf("error body %s, want {success:false, error:%q, message}", r.raw, errText)
		}
	} else if status < 300 && r.body["success"] != true {
		t.Fatalf("body %s lacks success:true", r.raw)
	}
}

const password = "Str0ng!pass"

// account is a signed-up user.
type account struct {
	id, email, token, orgID string
}

func (h *harness) signup(email, org string) account {
	h.t.Helper()
	r := h.do("POST", "/api/auth/signup", anon, map[string]any{"email": email, "password": password, "name": "User " + email, "organizationName": org})
	expect(h.t, r, 201, "")
	return account{id: r.str("user", "id"), email: email, token: r.str("token"), orgID: r.str("user", "organizationId")}
}

var tokenInMail = regexp.MustCompile(`token=([0-9a-f]{64})`)

// outbox returns every mail queued so far, oldest first. Reading claims the mails with a
// lease far in the future, so the harness keeps what it read; don't run the mail sender with it.
func (h *harness) outbox() []store.Mail {
	h.t.Helper()
	h.mailReads++
	// Each read looks past the leases of the previous ones.
	now := h.clock.Now().AddDate(1, 0, 2*h.mailReads)
	got, err := h.app.Store.Outbox().Claim(context.Background(), now, now.AddDate(0, 0, 1), 100000)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, m := range got {
		if !slices.ContainsFunc(h.mails, func(o store.Mail) bool { return o.ID == m.ID }) {
			h.mails = append(h.mails, m)
		}
	}
	return h.mails
}

// lastMailTo returns the subject and text of the newest outbox mail to addr.
func (h *harness) lastMailTo(addr string) (subject, text string) {
	h.t.Helper()
	for _, m := range h.outbox() {
		for _, to := range m.To {
			if to == addr {
				subject, text = m.Subject, m.Text
			}
		}
	}
	if text == "" {
		// With the workers running, the mail sender may have claimed it: it is on the console
		// once sent.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if text = h.console.lastTo(addr); text != "" {
				return "", text
			}
		}
		h.t.Fatalf("no mail to %s in the outbox", addr)
	}
	return subject, text
}

// invite makes admin invite email with role and returns the token from the e-mail.
func (h *harness) invite(admin account, email, role string) (id, token string) {
	h.t.Helper()
	r := h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": email, "role": role})
	expect(h.t, r, 201, "")
	_, text := h.lastMailTo(email)
	m := tokenInMail.FindStringSubmatch(text)
	if m == nil {
		h.t.Fatalf("no token link in the invitation mail: %s", text)
	}
	return r.str("invitation", "id"), m[1]
}

// join signs email up through an invitation from admin with role.
func (h *harness) join(admin account, email, role string) account {
	h.t.Helper()
	_, tok := h.invite(admin, email, role)
	r := h.do("POST", "/api/auth/signup", anon, map[string]any{"email": email, "password": password, "name": "Member " + email, "inviteToken": tok})
	expect(h.t, r, 201, "")
	return account{id: r.str("user", "id"), email: email, token: r.str("token"), orgID: r.str("user", "organizationId")}
}

func newJar() http.CookieJar {
	j, _ := cookiejar.New(nil)
	return j
}
