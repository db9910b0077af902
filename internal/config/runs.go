package config

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Runs is how the server runs suites: its embedded runner (or none), the remote runners'
// secret, the runs' defaults and bounds, and the Engine their containers go to.
type Runs struct {
	Runner      string // VERDICT_RUNNER [embedded]: embedded or none
	RunnerSlots int    // VERDICT_RUNNER_SLOTS [2]
	// RunnerSecret is the bearer secret remote runners (`verdict runner`) present on
	// /api/runner/*; empty: those routes answer 404 and no remote runner is served.
	RunnerSecret   string // VERDICT_RUNNER_SECRET
	DefaultImage   string // VERDICT_DEFAULT_IMAGE
	DefaultBaseURL string // VERDICT_DEFAULT_BASE_URL

	// RunnerLease is the embedded runner's lease (a heartbeat every third of it), and the time
	// the lease reaper gives every runner to renew after an outage of the database (at least
	// 10 s).
	RunnerLease time.Duration // VERDICT_RUNNER_LEASE [30s]
	Engine
	// AllowedImages are the image patterns any run may use; empty allows every image.
	AllowedImages []string // VERDICT_ALLOWED_IMAGES
	// PlanTimeouts caps a run's timeoutSeconds per plan name (VERDICT_PLAN_TIMEOUTS:
	// "free=15m,team=2h,enterprise=24h"); a plan the setting leaves out keeps its default.
	PlanTimeouts map[string]time.Duration
	// PlanShards caps a run's shards per plan name (VERDICT_PLAN_SHARDS:
	// "free=4,team=8,enterprise=32"); a plan the setting leaves out keeps its default.
	PlanShards map[string]int
}

// minRunnerSecret is the shortest VERDICT_RUNNER_SECRET accepted: the secret hands out runs
// and their variables, so it is never a short word.
const minRunnerSecret = 32

func decodeRuns(d *decoder) Runs {
	r := Runs{Runner: d.str("VERDICT_RUNNER", "embedded"), RunnerSlots: d.integer("VERDICT_RUNNER_SLOTS", 2),
		RunnerSecret: d.str("VERDICT_RUNNER_SECRET", ""), DefaultImage: d.str("VERDICT_DEFAULT_IMAGE", ""),
		DefaultBaseURL: d.str("VERDICT_DEFAULT_BASE_URL", ""), RunnerLease: d.duration("VERDICT_RUNNER_LEASE", 30*time.Second),
		Engine: decodeEngine(d), AllowedImages: d.list("VERDICT_ALLOWED_IMAGES", "")}
	if r.Runner != "embedded" && r.Runner != "none" {
		d.bad("VERDICT_RUNNER", "want embedded or none, got %q", r.Runner)
	}
	if r.RunnerSlots < 1 || r.RunnerSlots > 256 {
		d.bad("VERDICT_RUNNER_SLOTS", "want 1..256")
	}
	if r.RunnerSecret != "" && len(r.RunnerSecret) < minRunnerSecret {
		d.bad("VERDICT_RUNNER_SECRET", "want at least %d characters", minRunnerSecret)
	}
	if r.RunnerLease < 3*time.Second || r.RunnerLease > 10*time.Minute {
		d.bad("VERDICT_RUNNER_LEASE", "want 3s to 10m, got %s", r.RunnerLease)
	}
	// A plan the setting leaves out keeps its default cap.
	r.PlanTimeouts = map[string]time.Duration{"free": 15 * time.Minute, "team": 2 * time.Hour, "enterprise": 24 * time.Hour}
	for _, kv := range d.list("VERDICT_PLAN_TIMEOUTS", "free=15m,team=2h,enterprise=24h") {
		plan, v, _ := strings.Cut(kv, "=")
		dur, err := time.ParseDuration(strings.TrimSpace(v))
		plan = strings.TrimSpace(plan)
		if err != nil || dur < time.Minute || dur > 7*24*time.Hour || (plan != "free" && plan != "team" && plan != "enterprise") {
			d.bad("VERDICT_PLAN_TIMEOUTS", "want plan=duration pairs (free, team, enterprise; 1m to 168h), got %q", kv)
			continue
		}
		r.PlanTimeouts[plan] = dur
	}
	r.PlanShards = map[string]int{"free": 4, "team": 8, "enterprise": 32}
	for _, kv := range d.list("VERDICT_PLAN_SHARDS", "free=4,team=8,enterprise=32") {
		plan, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		plan = strings.TrimSpace(plan)
		if err != nil || n < 1 || n > 256 || (plan != "free" && plan != "team" && plan != "enterprise") {
			d.bad("VERDICT_PLAN_SHARDS", "want plan=shards pairs (free, team, enterprise; 1 to 256), got %q", kv)
			continue
		}
		r.PlanShards[plan] = n
	}
	return r
}

// Engine says where and how runs' containers go, for the embedded runner and `verdict runner`
// alike: the Docker engine (DOCKER_HOST) or, with VERDICT_BACKEND=kubernetes, a Job per run in
// a Kubernetes namespace, with the same limits.
type Engine struct {
	Backend     string  // VERDICT_BACKEND [docker]: docker or kubernetes
	DockerHost  string  // DOCKER_HOST
	RunMemoryMB int     // VERDICT_RUN_MEMORY_MB [2048]
	RunCPUs     float64 // VERDICT_RUN_CPUS [2]
	RunPids     int     // VERDICT_RUN_PIDS [1024]
	// RunShmMB is a run container's /dev/shm on the Docker engine (browsers need more than the
	// engine's 64 MB), at most the run's memory limit.
	RunShmMB int // VERDICT_RUN_SHM_MB [1024]
	// RunDiskMB bounds a run container's writable layer; 0 means no bound.
	RunDiskMB int // VERDICT_RUN_DISK_MB [10240]
	// RunNetwork is the engine network every run container joins, created by Verdict with
	// container-to-container traffic off so runs cannot reach each other.
	RunNetwork string // VERDICT_RUN_NETWORK [verdict-runs]
	// BlockedNets are destinations no run may reach (VERDICT_RUN_BLOCKED_CIDRS [169.254.0.0/16],
	// cloud metadata); empty (not nil) for none ("none").
	BlockedNets []netip.Prefix

	// Kubeconfig is the cluster's kubeconfig file(s), as kubectl reads KUBECONFIG; empty: the
	// in-cluster configuration of the pod Verdict runs in.
	Kubeconfig   string // KUBECONFIG
	K8sNamespace string // VERDICT_K8S_NAMESPACE [default]
	// K8sHelperImage is the verdict image every run's pod also runs, to keep and hand over the
	// reports: the same image, at the same version, as the server's.
	K8sHelperImage  string        // VERDICT_K8S_HELPER_IMAGE [verdict:local]
	K8sPullPolicy   string        // VERDICT_K8S_PULL_POLICY [IfNotPresent]
	K8sStartTimeout time.Duration // VERDICT_K8S_START_TIMEOUT [2m]
}

// dnsLabel is what a Kubernetes namespace name may be.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// decodeEngine reads and checks the engine settings.
func decodeEngine(d *decoder) Engine {
	e := Engine{Backend: d.str("VERDICT_BACKEND", "docker"), DockerHost: d.str("DOCKER_HOST", ""),
		RunMemoryMB: d.integer("VERDICT_RUN_MEMORY_MB", 2048), RunCPUs: d.number("VERDICT_RUN_CPUS", 2),
		RunPids: d.integer("VERDICT_RUN_PIDS", 1024), RunShmMB: d.integer("VERDICT_RUN_SHM_MB", 1024), RunDiskMB: d.integer("VERDICT_RUN_DISK_MB", 10240),
		RunNetwork: d.str("VERDICT_RUN_NETWORK", "verdict-runs"), Kubeconfig: d.str("KUBECONFIG", ""),
		K8sNamespace: d.str("VERDICT_K8S_NAMESPACE", "default"), K8sHelperImage: d.str("VERDICT_K8S_HELPER_IMAGE", "verdict:local"),
		K8sPullPolicy: d.str("VERDICT_K8S_PULL_POLICY", "IfNotPresent"), K8sStartTimeout: d.duration("VERDICT_K8S_START_TIMEOUT", 2*time.Minute)}
	if e.RunMemoryMB < 64 || e.RunCPUs <= 0 || e.RunPids < 16 {
		d.bad("VERDICT_RUN_MEMORY_MB/VERDICT_RUN_CPUS/VERDICT_RUN_PIDS", "want at least 64 MB, a positive CPU count and 16 processes")
	}
	if e.RunShmMB < 1 {
		d.bad("VERDICT_RUN_SHM_MB", "want a size in MB of at least 1")
	}
	if e.RunDiskMB < 0 {
		d.bad("VERDICT_RUN_DISK_MB", "want 0 (no bound) or a size in MB")
	}
	if e.RunNetwork == "" || len(e.RunNetwork) > 15 || strings.ContainsAny(e.RunNetwork, " /:") {
		d.bad("VERDICT_RUN_NETWORK", "want a network name of 1 to 15 characters (it also names the bridge), got %q", e.RunNetwork)
	}
	e.BlockedNets = []netip.Prefix{}
	for _, p := range d.list("VERDICT_RUN_BLOCKED_CIDRS", "169.254.0.0/16") {
		if p == "none" {
			continue
		}
		pre, err := netip.ParsePrefix(p)
		if err != nil {
			d.bad("VERDICT_RUN_BLOCKED_CIDRS", "%q is not a CIDR", p)
			continue
		}
		e.BlockedNets = append(e.BlockedNets, pre.Masked())
	}
	switch e.Backend {
	case "docker":
	case "kubernetes":
		e.checkKubernetes(d)
	default:
		d.bad("VERDICT_BACKEND", "want docker or kubernetes, got %q", e.Backend)
	}
	return e
}

// checkKubernetes checks the settings of the Kubernetes backend.
func (e *Engine) checkKubernetes(d *decoder) {
	if !dnsLabel.MatchString(e.K8sNamespace) {
		d.bad("VERDICT_K8S_NAMESPACE", "want a namespace name (lower-case letters, digits and '-'), got %q", e.K8sNamespace)
	}
	if strings.TrimSpace(e.K8sHelperImage) == "" {
		d.bad("VERDICT_K8S_HELPER_IMAGE", "want the verdict image, which every run's pod also runs")
	}
	switch e.K8sPullPolicy {
	case "Always", "IfNotPresent", "Never":
	default:
		d.bad("VERDICT_K8S_PULL_POLICY", "want Always, IfNotPresent or Never, got %q", e.K8sPullPolicy)
	}
	if e.K8sStartTimeout < time.Second {
		d.bad("VERDICT_K8S_START_TIMEOUT", "want at least 1s, got %s", e.K8sStartTimeout)
	}
}

// RunnerConfig is the settings of `verdict runner`, a runner on another host that reaches the
// server over HTTP: no database, no other secret than VERDICT_RUNNER_SECRET, and the Docker
// settings the embedded runner uses.
type RunnerConfig struct {
	Server string // VERDICT_SERVER: the server's URL; --server overrides it
	Secret string // VERDICT_RUNNER_SECRET
	Name   string // VERDICT_RUNNER_NAME; empty: the host name
	Slots  int    // VERDICT_RUNNER_SLOTS [2]
	// Lease is how long a run stays the runner's without a heartbeat (one goes every third of
	// it, and hears of cancels): how soon a dead runner's runs end, and how long a server
	// restart may last without losing them.
	Lease     time.Duration // VERDICT_RUNNER_LEASE [30s]
	LogLevel  string        // VERDICT_LOG_LEVEL [info]
	LogFormat string        // VERDICT_LOG_FORMAT [text]
	Engine
}

// runnerName is what VERDICT_RUNNER_NAME may be: it names the runner in the server's list and
// in its runs' runner ID.
var runnerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidRunnerName tells whether name may name a remote runner.
func ValidRunnerName(name string) bool { return runnerName.MatchString(name) }

// LoadRunner reads the settings of `verdict runner` (nil environ: the process environment).
func LoadRunner(environ map[string]string) (*RunnerConfig, error) {
	d := newDecoder(environ)
	c := &RunnerConfig{Server: d.str("VERDICT_SERVER", ""), Secret: d.str("VERDICT_RUNNER_SECRET", ""),
		Name: d.str("VERDICT_RUNNER_NAME", ""), Slots: d.integer("VERDICT_RUNNER_SLOTS", 2),
		Lease: d.duration("VERDICT_RUNNER_LEASE", 30*time.Second), LogLevel: d.str("VERDICT_LOG_LEVEL", "info"),
		LogFormat: d.str("VERDICT_LOG_FORMAT", "text"), Engine: decodeEngine(d)}
	if len(c.Secret) < minRunnerSecret {
		d.bad("VERDICT_RUNNER_SECRET", "want the server's runner secret (at least %d characters)", minRunnerSecret)
	}
	if c.Name == "" {
		c.Name, _ = os.Hostname()
	}
	if !ValidRunnerName(c.Name) {
		d.bad("VERDICT_RUNNER_NAME", "want 1 to 63 letters, digits, '.', '_' or '-', got %q", c.Name)
	}
	if c.Slots < 1 || c.Slots > 256 {
		d.bad("VERDICT_RUNNER_SLOTS", "want 1..256")
	}
	if c.Lease < 3*time.Second || c.Lease > 10*time.Minute {
		d.bad("VERDICT_RUNNER_LEASE", "want 3s to 10m, got %s", c.Lease)
	}
	checkLog(d, c.LogLevel, c.LogFormat)
	if err := d.err(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}
