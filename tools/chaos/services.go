package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process of the driver: its output goes to a log file in the work folder,
// and it is killed if the driver dies (Pdeathsig); scripts/chaos.sh also kills what the pids
// file lists, in case the driver is killed before its own cleanup.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProc(name, logPath string, env []string, bin string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	recordPid(cmd.Process.Pid)
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits for the exit, killing the process after grace.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

var pidsFile struct {
	sync.Mutex
	path string
}

// recordPid appends a child's pid and start time (field 22 of /proc/PID/stat) to the pids
// file scripts/chaos.sh kills on exit: the start time tells the child from a later process
// that got its pid.
func recordPid(pid int) {
	pidsFile.Lock()
	defer pidsFile.Unlock()
	if pidsFile.path == "" {
		return
	}
	f, err := os.OpenFile(pidsFile.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// The command's name, in parentheses, may hold spaces: the fields count after it.
	start := ""
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
		if fields := strings.Fields(string(stat[i+1:])); len(fields) > 19 {
			start = fields[19]
		}
	}
	fmt.Fprintln(f, pid, start)
	f.Close()
}

// runCmd runs a command to its end, its output kept for the error.
func runCmd(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ---- PostgreSQL: a cluster of the driver's own, run as the postgres user ----

type postgres struct {
	bin, dir string
	port     int
}

func (p *postgres) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

func (p *postgres) init(ctx context.Context) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("postgres: the postgres system user is missing (scripts/services.sh creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	if err := os.Chown(p.dir, uid, gid); err != nil {
		return err
	}
	return runCmd(ctx, "runuser", "-u", "postgres", "--", filepath.Join(p.bin, "initdb"), "-D", filepath.Join(p.dir, "data"),
		"-U", "postgres", "-A", "trust", "-E", "UTF8")
}

func (p *postgres) start(ctx context.Context) error {
	return runCmd(ctx, "runuser", "-u", "postgres", "--", filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.dir, "data"),
		"-l", filepath.Join(p.dir, "postgres.log"), "-w", "-t", "60", "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", p.port, p.dir), "start")
}

// stop is a fast shutdown: sessions are disconnected, as an operator's restart or a failover
// does.
func (p *postgres) stop(ctx context.Context) error {
	return runCmd(ctx, "runuser", "-u", "postgres", "--", filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.dir, "data"),
		"-m", "fast", "-w", "-t", "60", "stop")
}

// ---- Redis: a server of the driver's own, without persistence ----

type redisServer struct {
	dir  string
	port int
	p    *proc
}

func (r *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *redisServer) start(ctx context.Context) error {
	p, err := startProc("redis", filepath.Join(r.dir, "redis.log"), []string{"PATH=" + os.Getenv("PATH")}, "redis-server",
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	if err != nil {
		return err
	}
	r.p = p
	return waitFor(ctx, 10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), 200*time.Millisecond)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := io.WriteString(c, "PING\r\n"); err != nil {
			return false
		}
		b := make([]byte, 7)
		n, _ := io.ReadFull(c, b)
		return string(b[:n]) == "+PONG\r\n"
	})
}

func (r *redisServer) stop() { r.p.stop(syscall.SIGTERM, 10*time.Second) }

// ---- the data folder's file system: a small ext4 image on a loop device ----

type disk struct {
	image, mnt string
	sizeMB     int
	filler     string
}

func (d *disk) mount(ctx context.Context) error {
	f, err := os.Create(d.image)
	if err != nil {
		return err
	}
	if err := f.Truncate(int64(d.sizeMB) << 20); err != nil {
		f.Close()
		return err
	}
	f.Close()
	// No blocks reserved for root: the replicas run as root and must meet a full disk too.
	if err := runCmd(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", d.image); err != nil {
		return err
	}
	if err := os.MkdirAll(d.mnt, 0o755); err != nil {
		return err
	}
	return runCmd(ctx, "mount", "-o", "loop", d.image, d.mnt)
}

func (d *disk) unmount() {
	_ = runCmd(context.Background(), "umount", d.mnt)
}

// fill writes zeros until the file system has no byte left.
func (d *disk) fill() (int64, error) {
	d.filler = filepath.Join(d.mnt, "chaos-filler")
	f, err := os.Create(d.filler)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for _, size := range []int{1 << 20, 4 << 10, 256, 1} {
		buf := make([]byte, size)
		for {
			w, err := f.Write(buf)
			n += int64(w)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return n, err
			}
		}
	}
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		return n, err
	}
	return n, nil
}

func (d *disk) free() int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(d.mnt, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * st.Bsize
}

func (d *disk) release() error { return os.Remove(d.filler) }

// ---- Verdict: the replicas and the remote runner, the binary built from the tree ----

type replica struct {
	name    string
	port    int
	dataDir string
	logPath string
	env     []string
	bin     string
	p       *proc
}

func (r *replica) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func (r *replica) start(ctx context.Context) error {
	if err := os.MkdirAll(r.dataDir, 0o700); err != nil {
		return err
	}
	env := append(append([]string(nil), r.env...), "VERDICT_ADDR="+r.addr(), "VERDICT_DATA_DIR="+r.dataDir)
	p, err := startProc(r.name, r.logPath, env, r.bin, "serve")
	if err != nil {
		return err
	}
	r.p = p
	hc := &http.Client{Timeout: time.Second}
	err = waitFor(ctx, 60*time.Second, func() bool {
		if p.exited() {
			return true
		}
		res, err := hc.Get("http://" + r.addr() + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	if p.exited() {
		return fmt.Errorf("%s exited at start (%v); see %s", r.name, p.err, r.logPath)
	}
	return err
}

// ready asks the replica's /readyz directly (not through the balancer).
func (r *replica) ready(hc *http.Client) bool {
	res, err := hc.Get("http://" + r.addr() + "/readyz")
	if err != nil {
		return false
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// waitFor polls ok every 100 ms until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ok() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ---- the Docker engine the runner uses ----

type engine struct {
	pidFile  string // the engine's pid file (dockerd --pidfile)
	startCmd string // shell command that starts the engine and returns once it answers
	logPath  string
}

// restart stops the engine as a service manager does (SIGTERM: it stops its containers and
// exits), then starts it again with startCmd. It returns when the engine answers again, and
// how long it was away.
func (e *engine) restart(ctx context.Context) (stopped time.Duration, err error) {
	b, err := os.ReadFile(e.pidFile)
	if err != nil {
		return 0, fmt.Errorf("engine pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("engine pid file %s holds %q", e.pidFile, b)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return 0, fmt.Errorf("stop the engine (pid %d): %w", pid, err)
	}
	t0 := time.Now()
	if err := waitFor(ctx, 60*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }); err != nil {
		return 0, fmt.Errorf("the engine (pid %d) did not exit: %w", pid, err)
	}
	stopped = time.Since(t0)
	f, err := os.OpenFile(e.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return stopped, err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, "bash", "-c", e.startCmd)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return stopped, fmt.Errorf("start the engine (%s): %w; see %s", e.startCmd, err, e.logPath)
	}
	return stopped, nil
}
