// Command chaos is the driver of scripts/chaos.sh: it runs the real service (`verdict serve`,
// two replicas on PostgreSQL and Redis of its own, behind a small load balancer of its own,
// and a remote `verdict runner` on the Docker engine), runs suites, and injects one fault at a
// time while runs are in flight and queued and clients keep calling:
//
//	postgres  PostgreSQL stopped (pg_ctl stop -m fast) for -hold
//	redis     Redis stopped for -hold
//	engine    the Docker engine restarted mid-run (SIGTERM, then -engine-start)
//	freeze    the runner frozen (SIGSTOP) past its heartbeat but within its lease, then SIGCONT
//	lease     the runner frozen past its lease, then SIGCONT
//	replica   one replica killed (SIGKILL) mid-request, restarted 5 s later
//	disk      the replicas' data folder (a loop-mounted ext4 image) full
//
// For each it reports what became of every run (final status, error, exit code, the
// container's own exit code from the engine's events), every request the balancer answered
// (2xx, 4xx, 503, 500, other 5xx, connection errors), how long until /readyz answered 200 on
// every replica and a new run passed, the lines each run's stored log and a live event stream
// followed through the fault lost or repeated, and the effects (invitation mails received by
// an SMTP server, issues created in a fake Linear) that happened twice or never. It exits 1
// when a check fails (see checks.go), 2 when it cannot set up. It is a tool, not part of the
// service, and needs root (mount, runuser, signals to the engine).
//
//	chaos -verdict BIN -work DIR -pg-bin DIR [-faults postgres,redis,...] [-docker-host URL]
//	      [-engine-pidfile FILE -engine-start CMD] [-run-network NAME] [-lease 12s] [-hold 20s]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"verdict/internal/integrations/trackertest"
	"verdict/internal/testenv"
)

// settings are the driver's flags.
type settings struct {
	verdict, work, pgBin, image        string
	dockerHost, runNetwork, runnerName string
	enginePidFile, engineStart         string
	faults                             []string
	hold, lease, recoverWithin, bound  time.Duration
}

var allFaults = []string{"postgres", "redis", "engine", "freeze", "lease", "replica", "disk"}

func main() {
	var s settings
	var faults string
	flag.StringVar(&s.verdict, "verdict", "", "the verdict binary built from the tree")
	flag.StringVar(&s.work, "work", "", "work folder (logs, the database, the disk image)")
	flag.StringVar(&s.pgBin, "pg-bin", "/usr/local/bin", "folder of initdb and pg_ctl")
	flag.StringVar(&s.image, "image", "verdict-examples/slow:latest", "the sample suite image that prints numbered lines")
	flag.StringVar(&s.dockerHost, "docker-host", "", "DOCKER_HOST of the runner's engine (empty: the default)")
	flag.StringVar(&s.runnerName, "runner-name", "", "VERDICT_RUNNER_NAME of the runner (empty: chaos-<random>)")
	flag.StringVar(&s.runNetwork, "run-network", "", "VERDICT_RUN_NETWORK of the runner (empty: the default)")
	flag.StringVar(&s.enginePidFile, "engine-pidfile", "/var/run/docker.pid", "pid file of the runner's Docker engine")
	flag.StringVar(&s.engineStart, "engine-start", "", "shell command that starts the engine again and returns once it answers")
	flag.StringVar(&faults, "faults", strings.Join(allFaults, ","), "faults to inject, in order")
	flag.DurationVar(&s.hold, "hold", 20*time.Second, "how long PostgreSQL and Redis stay stopped")
	flag.DurationVar(&s.lease, "lease", 12*time.Second, "the runner's lease (VERDICT_RUNNER_LEASE); its heartbeat is a third of it")
	flag.DurationVar(&s.recoverWithin, "recover-within", 30*time.Second, "how soon after a fault the service must be ready and pass a new run")
	flag.DurationVar(&s.bound, "timeout", 270*time.Second, "bound of the whole run")
	flag.Parse()
	if s.verdict == "" || s.work == "" {
		fmt.Fprintln(os.Stderr, "usage: chaos -verdict BIN -work DIR [flags]")
		os.Exit(2)
	}
	for _, f := range strings.Split(faults, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if !contains(allFaults, f) {
			fmt.Fprintf(os.Stderr, "chaos: unknown fault %q (want some of %s)\n", f, strings.Join(allFaults, ","))
			os.Exit(2)
		}
		if f == "engine" && s.engineStart == "" {
			fmt.Fprintln(os.Stderr, "chaos: the engine fault needs -engine-start")
			os.Exit(2)
		}
		s.faults = append(s.faults, f)
	}
	pidsFile.path = filepath.Join(s.work, "pids")

	ctx, cancel := context.WithTimeout(context.Background(), s.bound)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		logf("interrupted")
		cancel()
	}()

	c := &chaos{settings: s, tb: &helperTB{}}
	code := c.main(ctx)
	os.Exit(code)
}

var logMu sync.Mutex

// logf writes a progress line to stderr; the report goes to stdout.
func logf(format string, args ...any) {
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(os.Stderr, "chaos: %s "+format+"\n", append([]any{time.Now().Format("15:04:05.0")}, args...)...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// chaos is one run of the driver: the service it started and what it saw.
type chaos struct {
	settings
	tb *helperTB

	pg       *postgres
	redis    *redisServer
	disk     *disk
	smtp     *testenv.SMTPServer
	linear   *trackertest.Linear
	replicas []*replica
	lb       *balancer
	lbURL    string
	lbSrv    *http.Server

	runnerEnv  []string
	runnerLog  string
	runnerMu   sync.Mutex
	runnerProc *proc
	frozen     bool

	engine *engine
	exits  *exitWatch

	admin, probe *apiClient // the organization whose runs the faults hit; another for the recovery probes
	adminEmail   string
	ticketRun    string // a finished run that tickets are filed from

	setupTraffic *traffic
	results      []*result
	seq          atomic.Int64

	mails   map[string]int // recipient → mails received
	issues  map[string]int // title → issues Linear created
	tickets map[string]int // title → tickets recorded on the run
}

func (c *chaos) main(ctx context.Context) int {
	t0 := time.Now()
	defer c.teardown()
	if err := c.setup(ctx); err != nil {
		logf("setup failed: %v", err)
		fmt.Printf("chaos: SETUP FAILED: %v (logs in %s)\n", err, c.work)
		return 2
	}
	logf("set up in %.1f s; faults: %s", time.Since(t0).Seconds(), strings.Join(c.faults, ", "))
	for i, key := range c.faults {
		if ctx.Err() != nil {
			logf("out of time before %s", key)
			break
		}
		f := faultByKey(c, key)
		logf("== %d/%d %s", i+1, len(c.faults), f.title)
		r := c.scenario(ctx, f)
		c.results = append(c.results, r)
	}
	c.checkEffects(ctx)
	failed := c.report(time.Since(t0))
	if ctx.Err() != nil {
		fmt.Printf("chaos: FAILED: interrupted, or out of time (the bound is %s): the figures above are partial\n", c.bound)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}

func (c *chaos) setup(ctx context.Context) error {
	var err error
	if c.runnerName == "" {
		c.runnerName = "chaos-" + randomHex(4)
	}

	// The data folder's file system first: the replicas' data folders live on it.
	c.disk = &disk{image: filepath.Join(c.work, "data.img"), mnt: filepath.Join(c.work, "data"), sizeMB: 64}
	if err := c.disk.mount(ctx); err != nil {
		return fmt.Errorf("disk: %w", err)
	}

	pgPort, err := freePort()
	if err != nil {
		return err
	}
	c.pg = &postgres{bin: c.pgBin, dir: filepath.Join(c.work, "pg"), port: pgPort}
	logf("postgres: initdb and start on 127.0.0.1:%d", pgPort)
	if err := c.pg.init(ctx); err != nil {
		return err
	}
	if err := c.pg.start(ctx); err != nil {
		return err
	}

	redisPort, err := freePort()
	if err != nil {
		return err
	}
	c.redis = &redisServer{dir: filepath.Join(c.work, "redis"), port: redisPort}
	if err := os.MkdirAll(c.redis.dir, 0o755); err != nil {
		return err
	}
	logf("redis: start on 127.0.0.1:%d", redisPort)
	if err := c.redis.start(ctx); err != nil {
		return err
	}

	c.smtp = testenv.StartSMTP(c.tb, testenv.SMTPOptions{})
	linearKey := "lin_api_chaos" + randomHex(8)
	c.linear = trackertest.NewLinear(c.tb, linearKey)

	// The balancer listens before the replicas start: it is their public URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c.lbURL = "http://" + ln.Addr().String()
	var addrs []string
	for i := range 2 {
		port, err := freePort()
		if err != nil {
			return err
		}
		r := &replica{name: fmt.Sprintf("replica%d", i+1), port: port, bin: c.verdict,
			dataDir: filepath.Join(c.disk.mnt, fmt.Sprintf("replica%d", i+1)),
			logPath: filepath.Join(c.work, fmt.Sprintf("replica%d.log", i+1))}
		c.replicas = append(c.replicas, r)
		addrs = append(addrs, r.addr())
	}
	c.lb = newBalancer(addrs)
	c.setupTraffic = c.lb.current()
	c.lbSrv = &http.Server{Handler: c.lb, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.lbSrv.Serve(ln) }()

	secret := randomHex(32)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.work,
		"DATABASE_URL=" + c.pg.url(), "REDIS_URL=" + c.redis.url(),
		"JWT_SECRET=" + randomHex(32), "ENCRYPTION_KEY=" + randomHex(32),
		"VERDICT_PUBLIC_URL=" + c.lbURL, "VERDICT_RUNNER=none", "VERDICT_RUNNER_SECRET=" + secret,
		"VERDICT_DEFAULT_PLAN=enterprise", "VERDICT_LOG_LEVEL=info",
		"VERDICT_RATE_LIMITS=executions=100000/1m,api=100000/1m,signup=1000/1m,invite=100000/1m,strict=10000/1m,me=100000/1m",
		"SMTP_HOST=127.0.0.1", fmt.Sprintf("SMTP_PORT=%d", c.smtp.Port), "SMTP_TLS=none",
		"SMTP_FROM=Verdict <no-reply@chaos.test>", "LINEAR_API_URL=" + c.linear.URL}
	for _, r := range c.replicas {
		r.env = env
		logf("%s: start on %s", r.name, r.addr())
		if err := r.start(ctx); err != nil {
			return err
		}
	}

	c.runnerLog = filepath.Join(c.work, "runner.log")
	c.runnerEnv = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.work,
		"VERDICT_RUNNER_SECRET=" + secret, "VERDICT_RUNNER_NAME=" + c.runnerName, "VERDICT_RUNNER_SLOTS=2",
		"VERDICT_RUNNER_LEASE=" + c.lease.String(), "VERDICT_RUN_MEMORY_MB=256", "VERDICT_RUN_CPUS=1",
		"VERDICT_LOG_LEVEL=info"}
	if c.dockerHost != "" {
		c.runnerEnv = append(c.runnerEnv, "DOCKER_HOST="+c.dockerHost)
	}
	if c.runNetwork != "" {
		c.runnerEnv = append(c.runnerEnv, "VERDICT_RUN_NETWORK="+c.runNetwork)
	}
	c.engine = &engine{pidFile: c.enginePidFile, startCmd: c.engineStart, logPath: filepath.Join(c.work, "engine.log")}
	if c.exits, err = watchExits(c.dockerHost, "remote:"+c.runnerName); err != nil {
		return err
	}
	logf("runner %s: start (lease %s)", c.runnerName, c.lease)
	if err := c.startRunner(); err != nil {
		return err
	}

	hc := &http.Client{Timeout: 40 * time.Second}
	c.adminEmail = "admin@chaos.test"
	if c.admin, err = c.signup(ctx, hc, c.adminEmail, "Chaos Co"); err != nil {
		return err
	}
	if c.probe, err = c.signup(ctx, hc, "probe@chaos.test", "Chaos Probe"); err != nil {
		return err
	}
	if err := c.admin.callRetrying(ctx, 10*time.Second, http.MethodPut, "/api/integrations/linear",
		map[string]any{"teamId": trackertest.Team, "apiKey": linearKey}, nil); err != nil {
		return fmt.Errorf("linear integration: %w", err)
	}

	// A first run shows the set-up works, and is the finished run tickets are filed from.
	c.ticketRun = "chaos-baseline"
	if err := c.admin.callRetrying(ctx, 10*time.Second, http.MethodPost, "/api/executions",
		queueBody(c.image, c.ticketRun, 5, 20*time.Millisecond), nil); err != nil {
		return fmt.Errorf("queue the first run: %w", err)
	}
	e, err := c.waitFinal(ctx, c.admin, c.ticketRun, 60*time.Second)
	if err != nil {
		return fmt.Errorf("the first run: %w", err)
	}
	if e.Status != "PASSED" {
		return fmt.Errorf("the first run ended %s (%s): the set-up does not run suites", e.Status, e.errText())
	}
	return nil
}

func (c *chaos) signup(ctx context.Context, hc *http.Client, email, org string) (*apiClient, error) {
	cl := &apiClient{base: c.lbURL, hc: hc}
	var out struct {
		Token string `json:"token"`
	}
	err := cl.callRetrying(ctx, 10*time.Second, http.MethodPost, "/api/auth/signup",
		map[string]any{"email": email, "password": "Chaos-pass-1!", "name": "Chaos " + org, "organizationName": org}, &out)
	if err != nil {
		return nil, fmt.Errorf("signup %s: %w", email, err)
	}
	cl.token = out.Token
	return cl, nil
}

func (c *chaos) startRunner() error {
	c.runnerMu.Lock()
	defer c.runnerMu.Unlock()
	p, err := startProc("runner", c.runnerLog, c.runnerEnv, c.verdict, "runner", "--server", c.lbURL)
	if err != nil {
		return err
	}
	c.runnerProc = p
	return nil
}

// signalRunner freezes (SIGSTOP) or thaws (SIGCONT) the runner.
func (c *chaos) signalRunner(sig syscall.Signal) error {
	c.runnerMu.Lock()
	defer c.runnerMu.Unlock()
	if c.runnerProc.exited() {
		return fmt.Errorf("the runner has exited (%v); see %s", c.runnerProc.err, c.runnerLog)
	}
	c.frozen = sig == syscall.SIGSTOP
	return syscall.Kill(c.runnerProc.pid(), sig)
}

func (c *chaos) teardown() {
	// The balancer first: it ends the runner's long-polls and the event streams, which the
	// processes would otherwise wait for as they shut down.
	if c.lbSrv != nil {
		c.lbSrv.Close()
	}
	var wg sync.WaitGroup
	if c.runnerProc != nil {
		if c.frozen {
			_ = c.signalRunner(syscall.SIGCONT)
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.runnerProc.stop(syscall.SIGTERM, 10*time.Second) }()
	}
	for _, r := range c.replicas {
		if r.p != nil {
			wg.Add(1)
			go func() { defer wg.Done(); r.p.stop(syscall.SIGTERM, 10*time.Second) }()
		}
	}
	wg.Wait()
	if c.exits != nil {
		c.exits.stop()
	}
	if c.redis != nil && c.redis.p != nil {
		c.redis.stop()
	}
	if c.pg != nil {
		_ = c.pg.stop(context.Background())
	}
	if c.disk != nil {
		if c.disk.filler != "" {
			_ = os.Remove(c.disk.filler)
		}
		c.disk.unmount()
	}
	c.tb.cleanup()
}

// waitFinal polls a run until it has a final status.
func (c *chaos) waitFinal(ctx context.Context, cl *apiClient, taskID string, timeout time.Duration) (*execution, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		e, err := cl.get(ctx, taskID)
		if err == nil && e.final() {
			return e, nil
		}
		if err != nil {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	if last != nil {
		return nil, fmt.Errorf("%s not final within %s (last error: %v)", taskID, timeout, last)
	}
	return nil, fmt.Errorf("%s not final within %s", taskID, timeout)
}
