package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Server is where and how the server runs: its address and public URL, the data folder, the
// log, the metrics' token and the reverse proxies it believes.
type Server struct {
	Addr      string // VERDICT_ADDR [127.0.0.1:8080]
	DataDir   string // VERDICT_DATA_DIR [./data]
	PublicURL string // VERDICT_PUBLIC_URL [http:// + Addr], without a trailing slash
	Dev       bool   // VERDICT_DEV [false]
	LogLevel  string // VERDICT_LOG_LEVEL [info]
	// LogFormat is the log's format on standard error: text (slog's key=value) or json.
	LogFormat string // VERDICT_LOG_FORMAT [text]
	// MetricsToken, when set, is the bearer token GET /metrics requires; empty: it is open.
	MetricsToken string // VERDICT_METRICS_TOKEN
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is believed (a single
	// address is its /32 or /128).
	TrustedProxies []netip.Prefix // VERDICT_TRUSTED_PROXIES
}

func decodeServer(d *decoder) Server {
	s := Server{Addr: d.str("VERDICT_ADDR", "127.0.0.1:8080"), DataDir: d.str("VERDICT_DATA_DIR", "./data"),
		PublicURL: d.str("VERDICT_PUBLIC_URL", ""), Dev: d.boolean("VERDICT_DEV", false),
		LogLevel: d.str("VERDICT_LOG_LEVEL", "info"), LogFormat: d.str("VERDICT_LOG_FORMAT", "text"),
		MetricsToken: d.str("VERDICT_METRICS_TOKEN", "")}
	if _, _, err := net.SplitHostPort(s.Addr); err != nil {
		d.bad("VERDICT_ADDR", "want host:port, got %q", s.Addr)
	}
	if s.PublicURL == "" {
		s.PublicURL = "http://" + s.Addr
	}
	s.PublicURL = strings.TrimRight(s.PublicURL, "/")
	if !strings.HasPrefix(s.PublicURL, "http://") && !strings.HasPrefix(s.PublicURL, "https://") {
		d.bad("VERDICT_PUBLIC_URL", "want an http(s) URL, got %q", s.PublicURL)
	}
	checkLog(d, s.LogLevel, s.LogFormat)
	if strings.ContainsAny(s.MetricsToken, " \t\r\n") {
		d.bad("VERDICT_METRICS_TOKEN", "must not contain spaces")
	}
	for _, p := range d.list("VERDICT_TRUSTED_PROXIES", "") {
		if !strings.Contains(p, "/") {
			if a, err := netip.ParseAddr(p); err == nil {
				p = netip.PrefixFrom(a, a.BitLen()).String()
			}
		}
		pre, err := netip.ParsePrefix(p)
		if err != nil {
			d.bad("VERDICT_TRUSTED_PROXIES", "%q is not a CIDR", p)
			continue
		}
		s.TrustedProxies = append(s.TrustedProxies, pre.Masked())
	}
	return s
}

// checkLog checks VERDICT_LOG_LEVEL and VERDICT_LOG_FORMAT, which `verdict runner` reads too.
func checkLog(d *decoder, level, format string) {
	switch strings.ToLower(level) {
	case "debug", "info", "warn", "error":
	default:
		d.bad("VERDICT_LOG_LEVEL", "want debug, info, warn or error, got %q", level)
	}
	switch format {
	case "text", "json":
	default:
		d.bad("VERDICT_LOG_FORMAT", "want text or json, got %q", format)
	}
}

// Database is where the state is: the database, and Redis, which replicas share.
type Database struct {
	URL      string // DATABASE_URL; empty: SQLite in the data folder
	RedisURL string // REDIS_URL; empty: in memory
}

func decodeDatabase(d *decoder) Database {
	db := Database{URL: d.str("DATABASE_URL", ""), RedisURL: d.str("REDIS_URL", "")}
	if u := db.URL; u != "" && !hasAnyPrefix(u, "postgres://", "postgresql://", "sqlite:", "file:") {
		d.bad("DATABASE_URL", "want postgres://…, sqlite:… or empty for the embedded SQLite")
	}
	if u := db.RedisURL; u != "" && !hasAnyPrefix(u, "redis://", "rediss://") {
		d.bad("REDIS_URL", "want redis://… or rediss://…")
	}
	return db
}

// Secrets are the keys of session tokens and of the values sealed at rest.
type Secrets struct {
	JWTSecret string        // JWT_SECRET, at least 32 bytes
	JWTExpiry time.Duration // JWT_EXPIRY [24h]
	// EncryptionKey is the AES-256-GCM key of secrets at rest: ENCRYPTION_KEY's 64 hex
	// characters, decoded.
	EncryptionKey []byte
	// SSOBreakGlass are the e-mail addresses of admins who may still sign in with a password
	// when their organization requires its identity provider, for when the provider is down
	// (VERDICT_SSO_BREAK_GLASS, comma-separated) [none].
	SSOBreakGlass []string
}

func decodeSecrets(d *decoder) Secrets {
	s := Secrets{JWTExpiry: d.duration("JWT_EXPIRY", 24*time.Hour), SSOBreakGlass: d.list("VERDICT_SSO_BREAK_GLASS", "")}
	if s.JWTExpiry <= 0 {
		d.bad("JWT_EXPIRY", "must be positive")
	}
	return s
}

// keys reads JWT_SECRET and ENCRYPTION_KEY. In dev mode, missing ones are generated once and
// kept in the data folder so tokens and encrypted values survive restarts.
func (s *Secrets) keys(d *decoder, srv Server) error {
	s.JWTSecret = d.str("JWT_SECRET", "")
	if s.JWTSecret == "" && srv.Dev {
		v, err := devSecret(srv.DataDir, "jwt-secret")
		if err != nil {
			return fmt.Errorf("JWT_SECRET: %w", err)
		}
		s.JWTSecret = v
	}
	if len(s.JWTSecret) < 32 && !srv.Dev {
		return errors.New("JWT_SECRET: required, at least 32 bytes (or set VERDICT_DEV=true for a generated development secret)")
	}
	if s.JWTSecret == "" {
		return errors.New("JWT_SECRET: required")
	}
	key := d.str("ENCRYPTION_KEY", "")
	if key == "" && srv.Dev {
		v, err := devSecret(srv.DataDir, "encryption-key")
		if err != nil {
			return fmt.Errorf("ENCRYPTION_KEY: %w", err)
		}
		key = v
	}
	k, err := hex.DecodeString(key)
	if err != nil || len(k) != 32 {
		return errors.New("ENCRYPTION_KEY: required, 64 hex characters (32 bytes for AES-256-GCM), or set VERDICT_DEV=true to generate one")
	}
	s.EncryptionKey = k
	return nil
}

// devSecret reads or creates <dataDir>/<name> holding 32 random bytes in hex.
func devSecret(dataDir, name string) (string, error) {
	p := filepath.Join(dataDir, name)
	if b, err := os.ReadFile(p); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	v := hex.EncodeToString(b)
	if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
		return "", err
	}
	return v, nil
}

// Mail is the SMTP server e-mail goes through; without a host, e-mails are printed to the log.
type Mail struct {
	SMTPHost     string // SMTP_HOST
	SMTPPort     int    // SMTP_PORT [587]
	SMTPUsername string // SMTP_USERNAME
	SMTPPassword string // SMTP_PASSWORD
	SMTPFrom     string // SMTP_FROM [Verdict <no-reply@verdict.local>]
	SMTPTLS      string // SMTP_TLS [starttls]: none, starttls or tls
}

func decodeMail(d *decoder) Mail {
	m := Mail{SMTPHost: d.str("SMTP_HOST", ""), SMTPPort: d.integer("SMTP_PORT", 587), SMTPUsername: d.str("SMTP_USERNAME", ""),
		SMTPPassword: d.str("SMTP_PASSWORD", ""), SMTPFrom: d.str("SMTP_FROM", "Verdict <no-reply@verdict.local>"),
		SMTPTLS: d.str("SMTP_TLS", "starttls")}
	switch m.SMTPTLS {
	case "none", "starttls", "tls":
	default:
		d.bad("SMTP_TLS", "want none, starttls or tls, got %q", m.SMTPTLS)
	}
	if m.SMTPHost != "" && (m.SMTPPort <= 0 || m.SMTPPort > 65535) {
		d.bad("SMTP_PORT", "want 1..65535")
	}
	return m
}

// Limits bound what clients may make the server do: requests' rate limits and body time, and
// the Socket.IO connections' numbers and queues.
type Limits struct {
	// BodyTimeout bounds the time to read a request's body (streams are exempt).
	BodyTimeout time.Duration // VERDICT_BODY_TIMEOUT [30s]
	// RateLimits overrides rate-limit buckets by name (VERDICT_RATE_LIMITS:
	// "executions=600/1m,api=200/1m"); nil: none. The bucket names are the API's, checked by
	// internal/app.
	RateLimits map[string]RateLimit
	// Socket.IO bounds, on each replica: live sockets per user (and per API key) and per
	// organization, and the MiB waiting to be written to one connection and to all together.
	SocketsPerUser     int // VERDICT_SOCKETS_PER_USER [20]
	SocketsPerOrg      int // VERDICT_SOCKETS_PER_ORG [200]
	SocketQueueMB      int // VERDICT_SOCKET_QUEUE_MB [4]
	SocketQueueTotalMB int // VERDICT_SOCKET_QUEUE_TOTAL_MB [64]
}

// RateLimit is one bucket's override: Limit requests per Window.
type RateLimit struct {
	Limit  int
	Window time.Duration
}

func decodeLimits(d *decoder) Limits {
	l := Limits{BodyTimeout: d.duration("VERDICT_BODY_TIMEOUT", 30*time.Second), SocketsPerUser: d.integer("VERDICT_SOCKETS_PER_USER", 20),
		SocketsPerOrg: d.integer("VERDICT_SOCKETS_PER_ORG", 200), SocketQueueMB: d.integer("VERDICT_SOCKET_QUEUE_MB", 4),
		SocketQueueTotalMB: d.integer("VERDICT_SOCKET_QUEUE_TOTAL_MB", 64)}
	for _, kv := range d.list("VERDICT_RATE_LIMITS", "") {
		name, rule, _ := strings.Cut(kv, "=")
		n, w, _ := strings.Cut(rule, "/")
		limit, err := strconv.Atoi(strings.TrimSpace(n))
		window, werr := time.ParseDuration(strings.TrimSpace(w))
		if name = strings.TrimSpace(name); name == "" || err != nil || limit < 1 || werr != nil || window < time.Second {
			d.bad("VERDICT_RATE_LIMITS", "want bucket=requests/window pairs (e.g. executions=600/1m), got %q", kv)
			continue
		}
		if l.RateLimits == nil {
			l.RateLimits = map[string]RateLimit{}
		}
		l.RateLimits[name] = RateLimit{Limit: limit, Window: window}
	}
	if l.BodyTimeout < time.Second {
		d.bad("VERDICT_BODY_TIMEOUT", "want at least 1s")
	}
	if l.SocketsPerUser < 1 || l.SocketsPerUser > 100000 {
		d.bad("VERDICT_SOCKETS_PER_USER", "want 1..100000, got %d", l.SocketsPerUser)
	}
	if l.SocketsPerOrg < 1 || l.SocketsPerOrg > 1000000 {
		d.bad("VERDICT_SOCKETS_PER_ORG", "want 1..1000000, got %d", l.SocketsPerOrg)
	}
	if l.SocketQueueMB < 1 || l.SocketQueueMB > 1024 {
		d.bad("VERDICT_SOCKET_QUEUE_MB", "want 1..1024, got %d", l.SocketQueueMB)
	}
	if l.SocketQueueTotalMB < l.SocketQueueMB || l.SocketQueueTotalMB > 1<<20 {
		d.bad("VERDICT_SOCKET_QUEUE_TOTAL_MB", "want VERDICT_SOCKET_QUEUE_MB (%d) up to 1048576, got %d", l.SocketQueueMB, l.SocketQueueTotalMB)
	}
	return l
}

// Billing is the plans of new organizations and the payment provider (Stripe). Without a secret
// key the billing routes answer 503.
type Billing struct {
	// DefaultPlan is the plan of new organizations (a self-hosted server without billing
	// gives everyone team or enterprise); `verdict admin set-plan` changes one afterwards.
	DefaultPlan           string // VERDICT_DEFAULT_PLAN [free]
	StripeSecretKey       string // STRIPE_SECRET_KEY
	StripeWebhookSecret   string // STRIPE_WEBHOOK_SECRET
	StripePriceTeam       string // STRIPE_PRICE_TEAM
	StripePriceEnterprise string // STRIPE_PRICE_ENTERPRISE
	StripeAPIBase         string // STRIPE_API_BASE, e.g. a stripe-mock address; empty: Stripe's API
}

func decodeBilling(d *decoder) Billing {
	b := Billing{DefaultPlan: d.str("VERDICT_DEFAULT_PLAN", "free"), StripeSecretKey: d.str("STRIPE_SECRET_KEY", ""),
		StripeWebhookSecret: d.str("STRIPE_WEBHOOK_SECRET", ""), StripePriceTeam: d.str("STRIPE_PRICE_TEAM", ""),
		StripePriceEnterprise: d.str("STRIPE_PRICE_ENTERPRISE", ""), StripeAPIBase: d.str("STRIPE_API_BASE", "")}
	switch b.DefaultPlan {
	case "free", "team", "enterprise":
	default:
		d.bad("VERDICT_DEFAULT_PLAN", "want free, team or enterprise, got %q", b.DefaultPlan)
	}
	if b.StripeAPIBase != "" {
		if !httpURL(b.StripeAPIBase) {
			d.bad("STRIPE_API_BASE", "want an http(s) URL, got %q", b.StripeAPIBase)
		}
		b.StripeAPIBase = strings.TrimRight(b.StripeAPIBase, "/")
	}
	if b.StripePriceTeam != "" && b.StripePriceTeam == b.StripePriceEnterprise {
		d.bad("STRIPE_PRICE_ENTERPRISE", "must differ from STRIPE_PRICE_TEAM")
	}
	return b
}

// httpURL tells whether s is an http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// AI is failure analysis with a model: the server's own keys, used by organizations without a
// key of their own (none: the built-in analyser), and the providers' API addresses (empty: the
// providers' own).
type AI struct {
	OpenAIAPIKey     string // OPENAI_API_KEY
	GeminiAPIKey     string // GEMINI_API_KEY
	AnthropicAPIKey  string // ANTHROPIC_API_KEY
	OpenAIBaseURL    string // OPENAI_BASE_URL
	GeminiBaseURL    string // GEMINI_BASE_URL
	AnthropicBaseURL string // ANTHROPIC_BASE_URL
}

func decodeAI(d *decoder) AI {
	a := AI{OpenAIAPIKey: d.str("OPENAI_API_KEY", ""), GeminiAPIKey: d.str("GEMINI_API_KEY", ""),
		AnthropicAPIKey: d.str("ANTHROPIC_API_KEY", ""), OpenAIBaseURL: d.str("OPENAI_BASE_URL", ""),
		GeminiBaseURL: d.str("GEMINI_BASE_URL", ""), AnthropicBaseURL: d.str("ANTHROPIC_BASE_URL", "")}
	for _, u := range []struct{ name, v string }{{"OPENAI_BASE_URL", a.OpenAIBaseURL}, {"GEMINI_BASE_URL", a.GeminiBaseURL},
		{"ANTHROPIC_BASE_URL", a.AnthropicBaseURL}} {
		if u.v != "" && !httpURL(u.v) {
			d.bad(u.name, "want an http(s) URL, got %q", u.v)
		}
	}
	return a
}

// Integrations are the issue trackers: the GraphQL endpoints tickets are created at, and the
// Monday.com API version asked for (the API-Version header).
type Integrations struct {
	LinearAPIURL     string // LINEAR_API_URL [https://api.linear.app/graphql]
	MondayAPIURL     string // MONDAY_API_URL [https://api.monday.com/v2]
	MondayAPIVersion string // MONDAY_API_VERSION [2026-07]
	// EgressAllow are the internal hosts, addresses and networks tenants' URLs may reach
	// (VERDICT_EGRESS_ALLOW, comma-separated; checked by app with internal/egress) [none].
	EgressAllow []string
	// NotifyRetryBase is the delay before a failed notification's first retry, doubled after
	// each failure up to an hour, for a day (VERDICT_NOTIFY_RETRY_BASE, 100ms to 10m) [10s].
	NotifyRetryBase time.Duration
}

// mondayVersion is the shape of a Monday.com API version: a year and a month.
var mondayVersion = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

func decodeIntegrations(d *decoder) Integrations {
	i := Integrations{LinearAPIURL: d.str("LINEAR_API_URL", "https://api.linear.app/graphql"),
		MondayAPIURL: d.str("MONDAY_API_URL", "https://api.monday.com/v2"), MondayAPIVersion: d.str("MONDAY_API_VERSION", "2026-07"),
		EgressAllow: d.list("VERDICT_EGRESS_ALLOW", "")}
	for _, u := range []struct{ name, v string }{{"LINEAR_API_URL", i.LinearAPIURL}, {"MONDAY_API_URL", i.MondayAPIURL}} {
		if !httpURL(u.v) {
			d.bad(u.name, "want an http(s) URL, got %q", u.v)
		}
	}
	if !mondayVersion.MatchString(i.MondayAPIVersion) {
		d.bad("MONDAY_API_VERSION", "want a Monday.com API version such as 2026-07, got %q", i.MondayAPIVersion)
	}
	i.NotifyRetryBase = d.duration("VERDICT_NOTIFY_RETRY_BASE", 10*time.Second)
	if i.NotifyRetryBase < 100*time.Millisecond || i.NotifyRetryBase > 10*time.Minute {
		d.bad("VERDICT_NOTIFY_RETRY_BASE", "want a duration from 100ms to 10m, got %s", i.NotifyRetryBase)
		i.NotifyRetryBase = 10 * time.Second
	}
	return i
}
