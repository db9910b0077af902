// Package config reads every setting from the environment once, at start, and validates it,
// naming the bad setting in the error. Nothing else in Verdict reads the environment.
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

	"github.com/caarlos0/env/v11"
)

// Config is the whole configuration of `verdict serve`.
type Config struct {
	Addr      string `env:"VERDICT_ADDR" envDefault:"127.0.0.1:8080"`
	DataDir   string `env:"VERDICT_DATA_DIR" envDefault:"./data"`
	PublicURL string `env:"VERDICT_PUBLIC_URL"`
	Dev       bool   `env:"VERDICT_DEV" envDefault:"false"`
	LogLevel  string `env:"VERDICT_LOG_LEVEL" envDefault:"info"`
	// LogFormat is the log's format on standard error: text (slog's key=value) or json.
	LogFormat string `env:"VERDICT_LOG_FORMAT" envDefault:"text"`
	// MetricsToken, when set, is the bearer token GET /metrics requires; empty: it is open.
	MetricsToken string `env:"VERDICT_METRICS_TOKEN"`
	// DefaultPlan is the plan of new organizations (a self-hosted server without billing
	// gives everyone team or enterprise); `verdict admin set-plan` changes one afterwards.
	DefaultPlan string `env:"VERDICT_DEFAULT_PLAN" envDefault:"free"`

	DatabaseURL string `env:"DATABASE_URL"`
	RedisURL    string `env:"REDIS_URL"`

	JWTSecret     string        `env:"JWT_SECRET"`
	JWTExpiry     time.Duration `env:"JWT_EXPIRY" envDefault:"24h"`
	EncryptionKey string        `env:"ENCRYPTION_KEY"`

	TrustedProxies []string `env:"VERDICT_TRUSTED_PROXIES" envSeparator:","`

	SMTPHost     string `env:"SMTP_HOST"`
	SMTPPort     int    `env:"SMTP_PORT" envDefault:"587"`
	SMTPUsername string `env:"SMTP_USERNAME"`
	SMTPPassword string `env:"SMTP_PASSWORD"`
	SMTPFrom     string `env:"SMTP_FROM" envDefault:"Verdict <no-reply@verdict.local>"`
	SMTPTLS      string `env:"SMTP_TLS" envDefault:"starttls"`

	// Payment provider (Stripe). Without a secret key the billing routes answer 503.
	StripeSecretKey       string `env:"STRIPE_SECRET_KEY"`
	StripeWebhookSecret   string `env:"STRIPE_WEBHOOK_SECRET"`
	StripePriceTeam       string `env:"STRIPE_PRICE_TEAM"`
	StripePriceEnterprise string `env:"STRIPE_PRICE_ENTERPRISE"`
	StripeAPIBase         string `env:"STRIPE_API_BASE"` // e.g. a stripe-mock address; empty: Stripe's API

	Runner      string `env:"VERDICT_RUNNER" envDefault:"embedded"`
	RunnerSlots int    `env:"VERDICT_RUNNER_SLOTS" envDefault:"2"`
	// RunnerSecret is the bearer secret remote runners (`verdict runner`) present on
	// /api/runner/*; empty: those routes answer 404 and no remote runner is served.
	RunnerSecret   string `env:"VERDICT_RUNNER_SECRET"`
	DefaultImage   string `env:"VERDICT_DEFAULT_IMAGE"`
	DefaultBaseURL string `env:"VERDICT_DEFAULT_BASE_URL"`

	// RunnerLease is the embedded runner's lease (a heartbeat every third of it), and the time
	// the lease reaper gives every runner to renew after an outage of the database (at least
	// 10 s).
	RunnerLease time.Duration `env:"VERDICT_RUNNER_LEASE" envDefault:"30s"`
	Engine
	// AllowedImages are the image patterns any run may use; empty allows every image.
	AllowedImages []string `env:"VERDICT_ALLOWED_IMAGES" envSeparator:","`
	// PlanTimeouts caps a run's timeoutSeconds per plan: "free=15m,team=2h,enterprise=24h"; a
	// plan left out keeps its default.
	PlanTimeouts string `env:"VERDICT_PLAN_TIMEOUTS" envDefault:"free=15m,team=2h,enterprise=24h"`

	// ReportsURL is a separate origin serving reports (no cookies of the API's); empty serves
	// them from PublicURL.
	ReportsURL string `env:"VERDICT_REPORTS_URL"`
	// Reports in an S3-compatible bucket instead of the data folder: set with S3Bucket, empty
	// keeps them on disk. S3Endpoint is the service's URL (its scheme decides TLS); S3PathStyle
	// addresses the bucket as a path rather than a host name (most self-hosted stores).
	S3Bucket    string `env:"VERDICT_S3_BUCKET"`
	S3Endpoint  string `env:"VERDICT_S3_ENDPOINT"`
	S3Region    string `env:"VERDICT_S3_REGION"`
	S3AccessKey string `env:"VERDICT_S3_ACCESS_KEY"`
	S3SecretKey string `env:"VERDICT_S3_SECRET_KEY"`
	S3PathStyle bool   `env:"VERDICT_S3_PATH_STYLE" envDefault:"false"`
	// BodyTimeout bounds the time to read a request's body (streams are exempt).
	BodyTimeout time.Duration `env:"VERDICT_BODY_TIMEOUT" envDefault:"30s"`
	// RateLimits overrides rate-limit buckets by name: "executions=600/1m,api=200/1m".
	RateLimits string `env:"VERDICT_RATE_LIMITS"`
	// Socket.IO bounds, on each replica: live sockets per user (and per API key) and per
	// organization, and the MiB waiting to be written to one connection and to all together.
	SocketsPerUser     int `env:"VERDICT_SOCKETS_PER_USER" envDefault:"20"`
	SocketsPerOrg      int `env:"VERDICT_SOCKETS_PER_ORG" envDefault:"200"`
	SocketQueueMB      int `env:"VERDICT_SOCKET_QUEUE_MB" envDefault:"4"`
	SocketQueueTotalMB int `env:"VERDICT_SOCKET_QUEUE_TOTAL_MB" envDefault:"64"`

	// Failure analysis with a model: the server's own keys, used by organizations without a key
	// of their own (none: the built-in analyser), and the providers' API addresses (empty: the
	// providers' own).
	OpenAIAPIKey     string `env:"OPENAI_API_KEY"`
	GeminiAPIKey     string `env:"GEMINI_API_KEY"`
	AnthropicAPIKey  string `env:"ANTHROPIC_API_KEY"`
	OpenAIBaseURL    string `env:"OPENAI_BASE_URL"`
	GeminiBaseURL    string `env:"GEMINI_BASE_URL"`
	AnthropicBaseURL string `env:"ANTHROPIC_BASE_URL"`

	// Issue trackers: the GraphQL endpoints tickets are created at, and the Monday.com API
	// version asked for (the API-Version header).
	LinearAPIURL     string `env:"LINEAR_API_URL" envDefault:"https://api.linear.app/graphql"`
	MondayAPIURL     string `env:"MONDAY_API_URL" envDefault:"https://api.monday.com/v2"`
	MondayAPIVersion string `env:"MONDAY_API_VERSION" envDefault:"2026-07"`

	// Derived by Load.
	Proxies  []netip.Prefix           `env:"-"`
	EncKey   []byte                   `env:"-"`
	Timeouts map[string]time.Duration `env:"-"` // PlanTimeouts parsed, by plan name
	Limits   map[string]RateLimit     `env:"-"` // RateLimits parsed, by bucket name
}

// bucketName is the shape of an S3 bucket's name that every store accepts: 3 to 63 lower-case
// letters, digits, dots and hyphens, starting and ending with a letter or digit.
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// checkS3 validates the report bucket's settings: all or none of them.
func (c *Config) checkS3(bad func(name, format string, args ...any)) {
	if c.S3Bucket == "" {
		for name, v := range map[string]string{"VERDICT_S3_ENDPOINT": c.S3Endpoint, "VERDICT_S3_REGION": c.S3Region,
			"VERDICT_S3_ACCESS_KEY": c.S3AccessKey, "VERDICT_S3_SECRET_KEY": c.S3SecretKey} {
			if v != "" {
				bad(name, "set without VERDICT_S3_BUCKET: set the bucket to keep reports in object storage, or unset it")
			}
		}
		return
	}
	if !bucketName.MatchString(c.S3Bucket) || strings.Contains(c.S3Bucket, "..") {
		bad("VERDICT_S3_BUCKET", "want a bucket name (3 to 63 lower-case letters, digits, dots and hyphens), got %q", c.S3Bucket)
	}
	c.S3Endpoint = strings.TrimRight(c.S3Endpoint, "/")
	if c.S3Endpoint == "" {
		bad("VERDICT_S3_ENDPOINT", "required with VERDICT_S3_BUCKET: the object store's URL, such as https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:9000")
	} else if u, err := url.Parse(c.S3Endpoint); err == nil && u.User != nil {
		bad("VERDICT_S3_ENDPOINT", "must not hold credentials: set VERDICT_S3_ACCESS_KEY and VERDICT_S3_SECRET_KEY")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
		bad("VERDICT_S3_ENDPOINT", "want the object store's http(s) URL without a path, such as http://127.0.0.1:9000, got %q", c.S3Endpoint)
	}
	if c.S3AccessKey == "" || c.S3SecretKey == "" {
		bad("VERDICT_S3_ACCESS_KEY", "VERDICT_S3_ACCESS_KEY and VERDICT_S3_SECRET_KEY are both required with VERDICT_S3_BUCKET")
	}
	if strings.ContainsAny(c.S3Region, " \t\r\n/") {
		bad("VERDICT_S3_REGION", "want a region name such as us-east-1, got %q", c.S3Region)
	}
}

// mondayVersion is the shape of a Monday.com API version: a year and a month.
var mondayVersion = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// RateLimit is one bucket's override: Limit requests per Window.
type RateLimit struct {
	Limit  int
	Window time.Duration
}

// Load reads the environment, fills dev-mode secrets, and validates.
func Load() (*Config, error) { return LoadFrom(nil) }

// LoadFrom is Load with an explicit environment (nil = the process environment), for tests.
func LoadFrom(environ map[string]string) (*Config, error) {
	c := &Config{}
	opts := env.Options{}
	if environ != nil {
		opts.Environment = environ
	}
	if err := env.ParseWithOptions(c, opts); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	if err := c.finish(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

func (c *Config) finish() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("VERDICT_ADDR", "want host:port, got %q", c.Addr)
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Addr
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if !strings.HasPrefix(c.PublicURL, "http://") && !strings.HasPrefix(c.PublicURL, "https://") {
		bad("VERDICT_PUBLIC_URL", "want an http(s) URL, got %q", c.PublicURL)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("VERDICT_LOG_LEVEL", "want debug, info, warn or error, got %q", c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		bad("VERDICT_LOG_FORMAT", "want text or json, got %q", c.LogFormat)
	}
	switch c.DefaultPlan {
	case "free", "team", "enterprise":
	default:
		bad("VERDICT_DEFAULT_PLAN", "want free, team or enterprise, got %q", c.DefaultPlan)
	}
	if strings.ContainsAny(c.MetricsToken, " \t\r\n") {
		bad("VERDICT_METRICS_TOKEN", "must not contain spaces")
	}
	if u := c.DatabaseURL; u != "" && !hasAnyPrefix(u, "postgres://", "postgresql://", "sqlite:", "file:") {
		bad("DATABASE_URL", "want postgres://…, sqlite:… or empty for the embedded SQLite")
	}
	if u := c.RedisURL; u != "" && !hasAnyPrefix(u, "redis://", "rediss://") {
		bad("REDIS_URL", "want redis://… or rediss://…")
	}
	if c.JWTExpiry <= 0 {
		bad("JWT_EXPIRY", "must be positive")
	}
	for _, p := range c.TrustedProxies {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.Contains(p, "/") {
			if a, err := netip.ParseAddr(p); err == nil {
				p = netip.PrefixFrom(a, a.BitLen()).String()
			}
		}
		pre, err := netip.ParsePrefix(p)
		if err != nil {
			bad("VERDICT_TRUSTED_PROXIES", "%q is not a CIDR", p)
			continue
		}
		c.Proxies = append(c.Proxies, pre.Masked())
	}
	switch c.SMTPTLS {
	case "none", "starttls", "tls":
	default:
		bad("SMTP_TLS", "want none, starttls or tls, got %q", c.SMTPTLS)
	}
	if c.SMTPHost != "" && (c.SMTPPort <= 0 || c.SMTPPort > 65535) {
		bad("SMTP_PORT", "want 1..65535")
	}
	for _, u := range []struct {
		name string
		v    *string
	}{{"OPENAI_BASE_URL", &c.OpenAIBaseURL}, {"GEMINI_BASE_URL", &c.GeminiBaseURL}, {"ANTHROPIC_BASE_URL", &c.AnthropicBaseURL}} {
		if *u.v == "" {
			continue
		}
		if p, err := url.Parse(*u.v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad(u.name, "want an http(s) URL, got %q", *u.v)
		}
	}
	for _, u := range []struct {
		name string
		v    string
	}{{"LINEAR_API_URL", c.LinearAPIURL}, {"MONDAY_API_URL", c.MondayAPIURL}} {
		if p, err := url.Parse(u.v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad(u.name, "want an http(s) URL, got %q", u.v)
		}
	}
	if !mondayVersion.MatchString(c.MondayAPIVersion) {
		bad("MONDAY_API_VERSION", "want a Monday.com API version such as 2026-07, got %q", c.MondayAPIVersion)
	}
	if c.StripeAPIBase != "" {
		if u, err := url.Parse(c.StripeAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("STRIPE_API_BASE", "want an http(s) URL, got %q", c.StripeAPIBase)
		}
		c.StripeAPIBase = strings.TrimRight(c.StripeAPIBase, "/")
	}
	if c.StripePriceTeam != "" && c.StripePriceTeam == c.StripePriceEnterprise {
		bad("STRIPE_PRICE_ENTERPRISE", "must differ from STRIPE_PRICE_TEAM")
	}
	c.Engine.check(bad)
	if c.Runner != "embedded" && c.Runner != "none" {
		bad("VERDICT_RUNNER", "want embedded or none, got %q", c.Runner)
	}
	if c.RunnerSlots < 1 || c.RunnerSlots > 256 {
		bad("VERDICT_RUNNER_SLOTS", "want 1..256")
	}
	if c.RunnerSecret != "" && len(c.RunnerSecret) < minRunnerSecret {
		bad("VERDICT_RUNNER_SECRET", "want at least %d characters", minRunnerSecret)
	}
	if c.RunnerLease < 3*time.Second || c.RunnerLease > 10*time.Minute {
		bad("VERDICT_RUNNER_LEASE", "want 3s to 10m, got %s", c.RunnerLease)
	}
	var images []string
	for _, p := range c.AllowedImages {
		if p = strings.TrimSpace(p); p != "" {
			images = append(images, p)
		}
	}
	c.AllowedImages = images
	// A plan the setting leaves out keeps its default cap.
	c.Timeouts = map[string]time.Duration{"free": 15 * time.Minute, "team": 2 * time.Hour, "enterprise": 24 * time.Hour}
	for _, kv := range strings.Split(c.PlanTimeouts, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		plan, d, _ := strings.Cut(kv, "=")
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		plan = strings.TrimSpace(plan)
		if err != nil || dur < time.Minute || dur > 7*24*time.Hour || (plan != "free" && plan != "team" && plan != "enterprise") {
			bad("VERDICT_PLAN_TIMEOUTS", "want plan=duration pairs (free, team, enterprise; 1m to 168h), got %q", kv)
			continue
		}
		c.Timeouts[plan] = dur
	}
	if c.ReportsURL != "" {
		c.ReportsURL = strings.TrimRight(c.ReportsURL, "/")
		u, err := url.Parse(c.ReportsURL)
		pub, _ := url.Parse(c.PublicURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/"):
			bad("VERDICT_REPORTS_URL", "want an http(s) origin such as https://reports.example.com, got %q", c.ReportsURL)
		case pub != nil && strings.EqualFold(u.Hostname(), pub.Hostname()):
			// Cookies ignore ports: only another host name keeps the API's cookies from reports.
			bad("VERDICT_REPORTS_URL", "must be on another host name than VERDICT_PUBLIC_URL")
		}
	}
	c.checkS3(bad)
	for _, kv := range strings.Split(c.RateLimits, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, rule, _ := strings.Cut(kv, "=")
		n, w, _ := strings.Cut(rule, "/")
		limit, err := strconv.Atoi(strings.TrimSpace(n))
		window, werr := time.ParseDuration(strings.TrimSpace(w))
		if name = strings.TrimSpace(name); name == "" || err != nil || limit < 1 || werr != nil || window < time.Second {
			bad("VERDICT_RATE_LIMITS", "want bucket=requests/window pairs (e.g. executions=600/1m), got %q", kv)
			continue
		}
		if c.Limits == nil {
			c.Limits = map[string]RateLimit{}
		}
		c.Limits[name] = RateLimit{Limit: limit, Window: window}
	}
	if c.BodyTimeout < time.Second {
		bad("VERDICT_BODY_TIMEOUT", "want at least 1s")
	}
	if c.SocketsPerUser < 1 || c.SocketsPerUser > 100000 {
		bad("VERDICT_SOCKETS_PER_USER", "want 1..100000, got %d", c.SocketsPerUser)
	}
	if c.SocketsPerOrg < 1 || c.SocketsPerOrg > 1000000 {
		bad("VERDICT_SOCKETS_PER_ORG", "want 1..1000000, got %d", c.SocketsPerOrg)
	}
	if c.SocketQueueMB < 1 || c.SocketQueueMB > 1024 {
		bad("VERDICT_SOCKET_QUEUE_MB", "want 1..1024, got %d", c.SocketQueueMB)
	}
	if c.SocketQueueTotalMB < c.SocketQueueMB || c.SocketQueueTotalMB > 1<<20 {
		bad("VERDICT_SOCKET_QUEUE_TOTAL_MB", "want VERDICT_SOCKET_QUEUE_MB (%d) up to 1048576, got %d", c.SocketQueueMB, c.SocketQueueTotalMB)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return c.secrets()
}

// secrets checks JWT_SECRET and ENCRYPTION_KEY. In dev mode, missing ones are generated once and
// kept in the data folder so tokens and encrypted values survive restarts.
func (c *Config) secrets() error {
	if c.JWTSecret == "" && c.Dev {
		s, err := devSecret(c.DataDir, "jwt-secret")
		if err != nil {
			return fmt.Errorf("JWT_SECRET: %w", err)
		}
		c.JWTSecret = s
	}
	if len(c.JWTSecret) < 32 && !c.Dev {
		return errors.New("JWT_SECRET: required, at least 32 bytes (or set VERDICT_DEV=true for a generated development secret)")
	}
	if c.JWTSecret == "" {
		return errors.New("JWT_SECRET: required")
	}
	if c.EncryptionKey == "" && c.Dev {
		s, err := devSecret(c.DataDir, "encryption-key")
		if err != nil {
			return fmt.Errorf("ENCRYPTION_KEY: %w", err)
		}
		c.EncryptionKey = s
	}
	k, err := hex.DecodeString(c.EncryptionKey)
	if err != nil || len(k) != 32 {
		return errors.New("ENCRYPTION_KEY: required, 64 hex characters (32 bytes for AES-256-GCM), or set VERDICT_DEV=true to generate one")
	}
	c.EncKey = k
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
	s := hex.EncodeToString(b)
	if err := os.WriteFile(p, []byte(s+"\n"), 0o600); err != nil {
		return "", err
	}
	return s, nil
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// minRunnerSecret is the shortest VERDICT_RUNNER_SECRET accepted: the secret hands out runs
// and their variables, so it is never a short word.
const minRunnerSecret = 32

// RunnerConfig is the settings of `verdict runner`, a runner on another host that reaches the
// server over HTTP: no database, no other secret than VERDICT_RUNNER_SECRET, and the Docker
// settings the embedded runner uses.
type RunnerConfig struct {
	Server string `env:"VERDICT_SERVER"` // the server's URL; --server overrides it
	Secret string `env:"VERDICT_RUNNER_SECRET"`
	Name   string `env:"VERDICT_RUNNER_NAME"` // empty: the host name
	Slots  int    `env:"VERDICT_RUNNER_SLOTS" envDefault:"2"`
	// Lease is how long a run stays the runner's without a heartbeat (one goes every third of
	// it, and hears of cancels): how soon a dead runner's runs end, and how long a server
	// restart may last without losing them.
	Lease     time.Duration `env:"VERDICT_RUNNER_LEASE" envDefault:"30s"`
	LogLevel  string        `env:"VERDICT_LOG_LEVEL" envDefault:"info"`
	LogFormat string        `env:"VERDICT_LOG_FORMAT" envDefault:"text"`
	Engine
}

// Engine says where and how runs' containers go, for the embedded runner and `verdict runner`
// alike: the Docker engine (DOCKER_HOST) or, with VERDICT_BACKEND=kubernetes, a Job per run in
// a Kubernetes namespace, with the same limits.
type Engine struct {
	Backend     string  `env:"VERDICT_BACKEND" envDefault:"docker"`
	DockerHost  string  `env:"DOCKER_HOST"`
	RunMemoryMB int     `env:"VERDICT_RUN_MEMORY_MB" envDefault:"2048"`
	RunCPUs     float64 `env:"VERDICT_RUN_CPUS" envDefault:"2"`
	RunPids     int     `env:"VERDICT_RUN_PIDS" envDefault:"1024"`
	// RunDiskMB bounds a run container's writable layer; 0 means no bound.
	RunDiskMB int `env:"VERDICT_RUN_DISK_MB" envDefault:"10240"`
	// RunNetwork is the engine network every run container joins, created by Verdict with
	// container-to-container traffic off so runs cannot reach each other.
	RunNetwork string `env:"VERDICT_RUN_NETWORK" envDefault:"verdict-runs"`
	// RunBlockedCIDRs are destinations no run may reach (cloud metadata by default).
	RunBlockedCIDRs []string       `env:"VERDICT_RUN_BLOCKED_CIDRS" envSeparator:"," envDefault:"169.254.0.0/16"`
	BlockedNets     []netip.Prefix `env:"-"` // RunBlockedCIDRs parsed; empty (not nil) for none

	// Kubeconfig is the cluster's kubeconfig file(s), as kubectl reads KUBECONFIG; empty: the
	// in-cluster configuration of the pod Verdict runs in.
	Kubeconfig   string `env:"KUBECONFIG"`
	K8sNamespace string `env:"VERDICT_K8S_NAMESPACE" envDefault:"default"`
	// K8sHelperImage is the verdict image every run's pod also runs, to keep and hand over the
	// reports: the same image, at the same version, as the server's.
	K8sHelperImage  string        `env:"VERDICT_K8S_HELPER_IMAGE" envDefault:"verdict:local"`
	K8sPullPolicy   string        `env:"VERDICT_K8S_PULL_POLICY" envDefault:"IfNotPresent"`
	K8sStartTimeout time.Duration `env:"VERDICT_K8S_START_TIMEOUT" envDefault:"2m"`
}

// dnsLabel is what a Kubernetes namespace name may be.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// check reports what is wrong with the engine settings through bad, and parses BlockedNets.
func (e *Engine) check(bad func(name, format string, args ...any)) {
	if e.RunMemoryMB < 64 || e.RunCPUs <= 0 || e.RunPids < 16 {
		bad("VERDICT_RUN_MEMORY_MB/VERDICT_RUN_CPUS/VERDICT_RUN_PIDS", "want at least 64 MB, a positive CPU count and 16 processes")
	}
	if e.RunDiskMB < 0 {
		bad("VERDICT_RUN_DISK_MB", "want 0 (no bound) or a size in MB")
	}
	if e.RunNetwork == "" || len(e.RunNetwork) > 15 || strings.ContainsAny(e.RunNetwork, " /:") {
		bad("VERDICT_RUN_NETWORK", "want a network name of 1 to 15 characters (it also names the bridge), got %q", e.RunNetwork)
	}
	e.BlockedNets = []netip.Prefix{}
	for _, p := range e.RunBlockedCIDRs {
		if p = strings.TrimSpace(p); p == "" || p == "none" {
			continue
		}
		pre, err := netip.ParsePrefix(p)
		if err != nil {
			bad("VERDICT_RUN_BLOCKED_CIDRS", "%q is not a CIDR", p)
			continue
		}
		e.BlockedNets = append(e.BlockedNets, pre.Masked())
	}
	switch e.Backend {
	case "docker":
	case "kubernetes":
		if !dnsLabel.MatchString(e.K8sNamespace) {
			bad("VERDICT_K8S_NAMESPACE", "want a namespace name (lower-case letters, digits and '-'), got %q", e.K8sNamespace)
		}
		if strings.TrimSpace(e.K8sHelperImage) == "" {
			bad("VERDICT_K8S_HELPER_IMAGE", "want the verdict image, which every run's pod also runs")
		}
		switch e.K8sPullPolicy {
		case "Always", "IfNotPresent", "Never":
		default:
			bad("VERDICT_K8S_PULL_POLICY", "want Always, IfNotPresent or Never, got %q", e.K8sPullPolicy)
		}
		if e.K8sStartTimeout < time.Second {
			bad("VERDICT_K8S_START_TIMEOUT", "want at least 1s, got %s", e.K8sStartTimeout)
		}
	default:
		bad("VERDICT_BACKEND", "want docker or kubernetes, got %q", e.Backend)
	}
}

// runnerName is what VERDICT_RUNNER_NAME may be: it names the runner in the server's list and
// in its runs' runner ID.
var runnerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidRunnerName tells whether name may name a remote runner.
func ValidRunnerName(name string) bool { return runnerName.MatchString(name) }

// LoadRunner reads the settings of `verdict runner` (nil environ: the process environment).
func LoadRunner(environ map[string]string) (*RunnerConfig, error) {
	c := &RunnerConfig{}
	opts := env.Options{}
	if environ != nil {
		opts.Environment = environ
	}
	if err := env.ParseWithOptions(c, opts); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	if len(c.Secret) < minRunnerSecret {
		bad("VERDICT_RUNNER_SECRET", "want the server's runner secret (at least %d characters)", minRunnerSecret)
	}
	if c.Name == "" {
		c.Name, _ = os.Hostname()
	}
	if !ValidRunnerName(c.Name) {
		bad("VERDICT_RUNNER_NAME", "want 1 to 63 letters, digits, '.', '_' or '-', got %q", c.Name)
	}
	if c.Slots < 1 || c.Slots > 256 {
		bad("VERDICT_RUNNER_SLOTS", "want 1..256")
	}
	if c.Lease < 3*time.Second || c.Lease > 10*time.Minute {
		bad("VERDICT_RUNNER_LEASE", "want 3s to 10m, got %s", c.Lease)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("VERDICT_LOG_LEVEL", "want debug, info, warn or error, got %q", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("VERDICT_LOG_FORMAT", "want text or json, got %q", c.LogFormat)
	}
	c.Engine.check(bad)
	if len(errs) > 0 {
		return nil, fmt.Errorf("configuration: %w", errors.Join(errs...))
	}
	return c, nil
}
