package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// OwnRedis is a Redis server of one test's own (redis-server, which scripts/services.sh
// installs), for tests that stop it: the shared one keeps serving the others.
type OwnRedis struct {
	t    testing.TB
	Port int
	URL  string
	cmd  *exec.Cmd
}

// StartOwnRedis starts a Redis server without persistence on a free port; it is stopped at
// the end of the test.
func StartOwnRedis(t testing.TB) *OwnRedis {
	t.Helper()
	SkipShort(t, "redis-server")
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not installed: run the tests with scripts/test.sh, which installs it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &OwnRedis{t: t, Port: port, URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port)}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Start starts the server again on its port (empty: nothing persists) and waits until it answers.
func (r *OwnRedis) Start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("redis-server: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); !pong(r.Port); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on port %d did not answer within 10s", r.Port)
		}
	}
}

// Stop kills the server, as a crash or a stopped host would, and waits for it to be gone.
func (r *OwnRedis) Stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// pong says whether a Redis server answers PING on port: the protocol's inline form, so that
// this package does not link a Redis client.
func pong(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}
