//go:build integration

package app_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/testenv"
	"verdict/internal/testenv/dockerenv"
)

const pytestImage = "verdict-examples/pytest:latest"

// pythonCommand runs the Python program in the run's SCRIPT variable (a run's command is split
// into words without a shell, so the program travels in a variable rather than in quotes).
const pythonCommand = `python3 -c 'import os; exec(os.environ["SCRIPT"])'`

// peerServer serves one answer on port 8000 and names the address of every client.
const peerServer = `
import http.server, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"org-a-data")
    def log_message(self, fmt, *args):
        print("request from", self.client_address[0], flush=True)
s = http.server.ThreadingHTTPServer(("0.0.0.0", 8000), H)
threading.Timer(240, s.shutdown).start()
print("serving", flush=True)
s.serve_forever()
`

// prober fetches each URL once and prints "<name>: reached <body>" or "<name>: failed <why>".
const prober = `
import os, urllib.request
for name in ["peer", "metadata", "hostlink", "base"]:
    url = os.environ["BASE_URL"] if name == "base" else os.environ["URL_" + name.upper()]
    try:
        body = urllib.request.urlopen(url, timeout=4).read().decode()
        print(name + ": reached " + body, flush=True)
    except Exception as e:
        print(name + ": failed " + str(e), flush=True)
`

// TestRunIsolation plays a hostile tenant: organization B's run tries to read organization A's
// running container by its address, a cloud metadata server on a link-local address (a network
// namespace made here, reached through the host like a real one), and the host's own link-local
// address; every attempt must be dropped (a timeout: a refusal would mean the packets got
// through), while the run still reaches its BASE_URL on the host's loopback.
func TestRunIsolation(t *testing.T) {
	testenv.DockerHost(t)
	if os.Geteuid() != 0 {
		t.Fatal("this test creates a network namespace and reads iptables: run it as root")
	}
	netName := "vdt" + domain.RandomHex(4)
	meta := newMetadataNS(t) // cleaned up last, after the runs have stopped
	t.Cleanup(func() { removeRunNetwork(t, netName) })

	// BASE_URL: a server on the host, reached by runs through host.docker.internal.
	base, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	baseToken := "base-" + domain.RandomHex(6)
	baseSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, baseToken) })}
	go baseSrv.Serve(base)
	t.Cleanup(func() { baseSrv.Close() })
	basePort := base.Addr().(*net.TCPAddr).Port

	// The metadata server and the host's link-local address answer the host itself.
	hostLink := fmt.Sprintf("http://%s:%d/", meta.hostAddr, basePort)
	for url, want := range map[string]string{"http://" + meta.addr + "/": meta.token, hostLink: baseToken} {
		if got := httpGet(t, url); got != want {
			t.Fatalf("from the host, %s answers %q, want %q", url, got, want)
		}
	}

	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"VERDICT_RUN_NETWORK": netName}})
	orgA := h.signup("a@isolation.example", "Org A")
	orgB := h.signup("b@isolation.example", "Org B")

	serving := h.queue(bearer(orgA.token), map[string]any{"image": pytestImage, "command": pythonCommand,
		"envVars": map[string]any{"SCRIPT": peerServer}, "timeoutSeconds": 300})
	h.waitFor(bearer(orgA.token), serving, 60*time.Second, func(r resp) bool { return r.str("execution", "status") == "RUNNING" })
	peerIP := containerIP(t, orgA.orgID, serving)
	peerURL := "http://" + net.JoinHostPort(peerIP, "8000") + "/"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if body, err := tryGet(peerURL); err == nil && body == "org-a-data" {
			break // A serves: the host reaches it
		}
		if time.Now().After(deadline) {
			t.Fatalf("organization A's server at %s never answered the host", peerURL)
		}
	}

	probe := h.queue(bearer(orgB.token), map[string]any{"image": pytestImage, "command": pythonCommand,
		"baseUrl": fmt.Sprintf("http://127.0.0.1:%d", basePort), "timeoutSeconds": 120,
		"envVars": map[string]any{"SCRIPT": prober, "URL_PEER": peerURL, "URL_METADATA": "http://" + meta.addr + "/", "URL_HOSTLINK": hostLink}})
	r := h.waitFor(bearer(orgB.token), probe, 90*time.Second, final)
	logs := h.do("GET", "/api/executions/"+probe+"/logs", bearer(orgB.token), nil).str("logs")
	if r.str("execution", "status") != "PASSED" {
		t.Fatalf("probe run: %s\n%s", r.raw, logs)
	}
	for _, want := range []string{"peer: failed <urlopen error timed out>", "metadata: failed <urlopen error timed out>",
		"hostlink: failed <urlopen error timed out>", "base: reached " + baseToken} {
		if !strings.Contains(logs, want+"\n") {
			t.Errorf("the probe's log lacks %q:\n%s", want, logs)
		}
	}
	expect(t, h.do("POST", "/api/executions/"+serving+"/cancel", bearer(orgA.token), nil), 200, "")
	h.waitFor(bearer(orgA.token), serving, 30*time.Second, final)

	// The drops are Verdict's own rules on the run network's bridge.
	rules, err := exec.Command("iptables", "-S").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S: %v\n%s", err, rules)
	}
	for _, chain := range []string{"DOCKER-USER", "INPUT"} {
		if !strings.Contains(string(rules), "-A "+chain+" -d 169.254.0.0/16 -i "+netName+" ") {
			t.Errorf("no %s rule dropping 169.254.0.0/16 from %s:\n%s", chain, netName, rules)
		}
	}
}

func tryGet(url string) (string, error) {
	c := http.Client{Timeout: 3 * time.Second}
	res, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	body, err := tryGet(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return body
}

// containerIP finds the running container of a run by its labels and returns its address.
func containerIP(t *testing.T, orgID, taskID string) string {
	t.Helper()
	c := dockerenv.Client(t)
	f := make(client.Filters)
	f.Add("label", run.LabelOrg+"="+orgID)
	f.Add("label", run.LabelTask+"="+taskID)
	ctx := context.Background()
	var list client.ContainerListResult
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var err error
		list, err = c.ContainerList(ctx, client.ContainerListOptions{Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s has %d running containers", taskID, len(list.Items))
		}
	}
	res, err := c.ContainerInspect(ctx, list.Items[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A run's network is that of the sandbox it joined.
	if sandbox, ok := strings.CutPrefix(string(res.Container.HostConfig.NetworkMode), "container:"); ok {
		if res, err = c.ContainerInspect(ctx, sandbox, client.ContainerInspectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range res.Container.NetworkSettings.Networks {
		if n.IPAddress.IsValid() {
			return n.IPAddress.String()
		}
	}
	t.Fatalf("run %s's container has no address: %+v", taskID, res.Container.NetworkSettings.Networks)
	return ""
}

// removeRunNetwork removes a test's run network and the rules Verdict installed for its bridge.
func removeRunNetwork(t *testing.T, name string) {
	if out, err := exec.Command("docker", "network", "rm", name).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such network") && !strings.Contains(string(out), "not found") {
		t.Errorf("removing network %s: %v\n%s", name, err, out)
	}
	for _, chain := range []string{"DOCKER-USER", "INPUT"} {
		out, _ := exec.Command("iptables", "-S", chain).Output()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "-A ") && strings.Contains(line, " -i "+name+" ") {
				args := strings.Fields("-D" + strings.TrimPrefix(line, "-A"))
				if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
					t.Errorf("iptables %v: %v\n%s", args, err, out)
				}
			}
		}
	}
}

// metadataNS is a stand-in for a cloud metadata server: an HTTP server on 169.254.169.254:80 in
// a network namespace joined to the host by a veth pair whose host end is 169.254.169.1/16.
type metadataNS struct {
	addr, hostAddr, token string
}

func newMetadataNS(t *testing.T) *metadataNS {
	t.Helper()
	suffix := domain.RandomHex(3)
	ns, hostIf, nsIf := "vdt-meta-"+suffix, "vdm"+suffix+"h", "vdm"+suffix+"n"
	ip := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s: %v\n%s (the test needs root and the ip command)", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", hostIf).Run()
		_ = exec.Command("ip", "netns", "del", ns).Run()
	})
	ip("netns", "add", ns)
	ip("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	ip("link", "set", nsIf, "netns", ns)
	ip("addr", "add", "169.254.169.1/16", "dev", hostIf)
	ip("link", "set", hostIf, "up")
	ip("-n", ns, "link", "set", "lo", "up")
	ip("-n", ns, "addr", "add", "169.254.169.254/16", "dev", nsIf)
	ip("-n", ns, "link", "set", nsIf, "up")
	// Replies go back to the host whatever source address the host's NAT gave the request.
	ip("-n", ns, "route", "add", "default", "via", "169.254.169.1")
	// Nothing may go to a real metadata server: the address must lead into this namespace.
	if route := ip("route", "get", "169.254.169.254"); !strings.Contains(route, "dev "+hostIf+" ") {
		t.Fatalf("169.254.169.254 is not routed to the test namespace: %s", route)
	}

	m := &metadataNS{addr: "169.254.169.254", hostAddr: "169.254.169.1", token: "metadata-" + domain.RandomHex(6)}
	l := listenInNS(t, ns, "tcp", m.addr+":80")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, m.token) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return m
}

// listenInNS opens a listener inside the named network namespace: the socket belongs to the
// namespace it was made in, wherever it is served from.
func listenInNS(t *testing.T, ns, network, addr string) net.Listener {
	t.Helper()
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The thread is unlocked only once it is back in the test's namespace; otherwise it
		// ends with this goroutine.
		runtime.LockOSThread()
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer self.Close()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		l, lerr := net.Listen(network, addr)
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			if l != nil {
				l.Close()
			}
			ch <- result{err: fmt.Errorf("setns back: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{l, lerr}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listening on %s in namespace %s: %v", addr, ns, r.err)
	}
	t.Cleanup(func() { r.l.Close() })
	return r.l
}
