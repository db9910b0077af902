//go:build integration

package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"verdict/internal/domain"
	"verdict/internal/peerhttp"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
	"verdict/internal/testenv/dockerenv"
	"verdict/internal/testenv/s3env"
)

// runnerProcess is a `verdict runner` process serving one replica.
type runnerProcess struct {
	name   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{}
}

// startRunnerProcess starts the built binary as `verdict runner --server url`, named name, with
// two slots, on the test Docker engine (or what env, NAME=value settings, says). It is stopped
// (SIGTERM) when the test ends, and the containers it left on the engine are removed.
func startRunnerProcess(t *testing.T, url, name string, env ...string) *runnerProcess {
	t.Helper()
	cmd := exec.Command(verdictBinary(t), "runner", "--server", url)
	cmd.Env = append(os.Environ(), "VERDICT_RUNNER_SECRET="+runnerSecret, "VERDICT_RUNNER_NAME="+name,
		"VERDICT_RUNNER_SLOTS=2", "DOCKER_HOST="+testenv.DockerHost(t), "VERDICT_LOG_LEVEL=info")
	cmd.Env = append(cmd.Env, env...)
	p := &runnerProcess{name: name, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("runner %s said:\n%s", name, p.stderr.String())
		}
		removeRunnerContainers(t, peerhttp.RunnerID(name))
	})
	return p
}

// removeRunnerContainers removes the containers runner id left on the test engine (a killed
// runner's run goes on in its container until someone removes it) and its network sandboxes.
func removeRunnerContainers(t *testing.T, id string) {
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Log(err)
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, label := range []string{run.LabelManaged, docker.LabelSandbox} {
		cs, err := b.List(ctx, map[string]string{label: "true", run.LabelRunner: id})
		if err != nil {
			t.Log(err)
			return
		}
		for _, c := range cs {
			_ = b.Remove(ctx, c.ID)
		}
	}
}

// scaleRun is one run the scale test queued: where, as whom, and what it should end as.
type scaleRun struct {
	task, image, want string
	org               int
}

// TestScaleOut: two serve replicas on one PostgreSQL database, one Redis and one bucket, with
// no runner of their own, and two `verdict runner` processes, one on each replica. Runs of three
// organizations on different plans all end as their images say, spread over both runners, and
// no organization ever has more runs going than its plan allows; reports uploaded through one
// replica open on the other, live logs reach a socket and SSE followers on the other replica,
// and a runner killed mid-run loses its run within a lease while the other takes new work.
func TestScaleOut(t *testing.T) {
	testenv.DockerHost(t)
	bucket := s3env.Bucket(t)
	dbURL := testenv.PostgresDB(t)
	prefix := testenv.KeyPrefix(t)
	replica := func() *harness {
		env := s3Env(bucket, t.TempDir())
		env["VERDICT_RUNNER"] = "none"
		env["VERDICT_RUNNER_SECRET"] = runnerSecret
		return newHarness(t, harnessOpts{dialect: "postgres", databaseURL: dbURL, redis: true, redisPrefix: prefix,
			realClock: true, workers: true, env: env})
	}
	hs := []*harness{replica(), replica()}
	names := []string{"scale-a", "scale-b"}
	procs := []*runnerProcess{startRunnerProcess(t, hs[0].srv.URL, names[0]), startRunnerProcess(t, hs[1].srv.URL, names[1])}
	// uploadedTo is the replica a runner talks to, by runner ID; otherReplica the other one.
	uploadedTo := map[string]int{peerhttp.RunnerID(names[0]): 0, peerhttp.RunnerID(names[1]): 1}

	// Three organizations on three plans, signed up on alternate replicas.
	plans := []domain.Plan{domain.PlanFree, domain.PlanTeam, domain.PlanEnterprise}
	var admins []account
	for i, p := range plans {
		admin := hs[i%2].signup(fmt.Sprintf("scale%d@example.com", i), fmt.Sprintf("Scale %d Co", i))
		if err := hs[0].app.Store.Organizations().UpdatePlan(context.Background(), admin.orgID, p, domain.Billing{}); err != nil {
			t.Fatal(err)
		}
		admins = append(admins, admin)
	}
	limit := func(org int) int { return domain.LimitsFor(plans[org]).MaxConcurrentRuns }

	// Each replica lists both runners, though each runner calls only one of them; a third
	// process under a name in use waits for the name and takes no run.
	for i, h := range hs {
		deadline := time.Now().Add(30 * time.Second)
		for {
			l := h.do("GET", "/api/runners", bearer(admins[0].token), nil)
			if strings.Contains(l.raw, `"name":"scale-a"`) && strings.Contains(l.raw, `"name":"scale-b"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d lists: %s", i, l.raw)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	dup := startRunnerProcess(t, hs[1].srv.URL, names[0])
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(dup.stderr.String(), "waiting for the server to give this runner its name"); {
		if time.Now().After(deadline) {
			t.Fatalf("the second scale-a did not wait for its name:\n%s", dup.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = dup.cmd.Process.Signal(syscall.SIGTERM)
	<-dup.exited
	if out := dup.stderr.String(); strings.Contains(out, "removing a container") || strings.Contains(out, "verdict runner started") {
		t.Fatalf("the second scale-a went past its name:\n%s", out)
	}

	// A socket on replica 1 for the enterprise organization, before anything runs.
	const watched = 2
	events := dialSocket(t, hs[1].srv.URL, admins[watched].token)
	if e := nextEvent(t, events, 10*time.Second); e.name != "auth-success" {
		t.Fatalf("socket: %+v", e)
	}
	var sockMu sync.Mutex
	sockLogs := map[string]*strings.Builder{}
	sockDone := make(chan struct{})
	stopSock := make(chan struct{})
	t.Cleanup(func() { close(stopSock); <-sockDone })
	go func() {
		defer close(sockDone)
		for {
			select {
			case e := <-events:
				if e.name != "execution-log" {
					continue
				}
				task, _ := e.data["taskId"].(string)
				text, _ := e.data["log"].(string)
				sockMu.Lock()
				if sockLogs[task] == nil {
					sockLogs[task] = &strings.Builder{}
				}
				sockLogs[task].WriteString(text)
				sockMu.Unlock()
			case <-stopSock:
				return
			}
		}
	}()

	// The sampler: every organization's runs going, as the claim counts them, never above its plan.
	ctx, stopSampling := context.WithCancel(context.Background())
	defer stopSampling()
	maxGoing := make([]int, len(plans))
	maxTotal := 0
	var sampleErr error
	samples := 0
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			total := 0
			for org := range plans {
				n, err := hs[samples%2].app.Store.Executions().CountActive(ctx, admins[org].orgID)
				if err != nil {
					if ctx.Err() == nil {
						sampleErr = err
					}
					return
				}
				if n > maxGoing[org] {
					maxGoing[org] = n
				}
				if n > limit(org) && sampleErr == nil {
					sampleErr = fmt.Errorf("organization %d (%s) had %d runs going, its plan allows %d", org, plans[org], n, limit(org))
				}
				total += n
			}
			maxTotal = max(maxTotal, total)
			samples++
			time.Sleep(20 * time.Millisecond)
		}
	}()

	// 50 runs over the three organizations, queued on alternate replicas: mostly pass and fail,
	// every tenth a short slow one.
	start := time.Now()
	var runs []scaleRun
	var followTask string
	for i := range 50 {
		org := i % 3
		body := map[string]any{"image": passImage}
		want := "PASSED"
		switch {
		case i%10 == 9:
			body = map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "30", "INTERVAL_MS": "30"}}
		case i%4 == 1:
			body, want = map[string]any{"image": failImage}, "FAILED"
		}
		task := hs[i%2].queue(bearer(admins[org].token), body)
		runs = append(runs, scaleRun{task: task, image: body["image"].(string), want: want, org: org})
		if i == 9 {
			followTask = task
		}
	}

	// One slow run followed over SSE on both replicas: one of them is not the one its runner
	// talks to.
	type sseResult struct {
		log, status string
	}
	sseOut := make([]chan sseResult, 2)
	for i, h := range hs {
		sseOut[i] = make(chan sseResult, 1)
		fctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		done := make(chan struct{})
		t.Cleanup(func() { cancel(); <-done })
		go func() {
			defer close(done)
			var f followed
			res := h.openSSE(fctx, "/api/executions/"+followTask+"/events", bearer(admins[runs[9].org].token))
			f.consume(t, res.Body, nil)
			res.Body.Close()
			sseOut[i] <- sseResult{f.log.String(), f.finalStatus()}
		}()
	}

	// Every run ends as its image says, run by one of the two runners.
	ranBy := map[string]int{}
	freeRanBy := map[string]int{}
	views := map[string]resp{}
	for i, r := range runs {
		h := hs[(i+1)%2] // read through the replica it was not queued on
		got := h.waitFor(bearer(admins[r.org].token), r.task, 3*time.Minute, final)
		if got.str("execution", "status") != r.want {
			t.Fatalf("%s: want %s, got %s", r.task, r.want, got.raw)
		}
		runner := got.str("execution", "runner")
		if _, ok := uploadedTo[runner]; !ok {
			t.Fatalf("%s: runner %q", r.task, runner)
		}
		ranBy[runner]++
		if r.org == 0 {
			freeRanBy[runner]++
		}
		views[r.task] = got
	}
	elapsed := time.Since(start)
	stopSampling()
	<-sampled
	if sampleErr != nil {
		t.Fatal(sampleErr)
	}
	t.Logf("50 runs in %s; by runner %v; most runs going at once per organization %v (plans %v), in all %d; %d samples",
		elapsed.Round(time.Second), ranBy, maxGoing, plans, maxTotal, samples)
	// Both runners took runs, and the free organization's one slot held though both claimed all
	// along (a limit kept per runner would have let each run one of its runs: the sampler would
	// have seen two). Which runner takes its next run is whichever frees a slot first, often the
	// one that ran its last: freeRanBy is logged, not required to hold both.
	if len(ranBy) != 2 {
		t.Fatalf("the runs did not spread over both runners: %v, the free organization's %v", ranBy, freeRanBy)
	}
	t.Logf("the free organization's runs by runner: %v", freeRanBy)
	if maxGoing[0] != 1 || maxTotal < 2 {
		t.Fatalf("runs going at once: per organization %v, in all %d", maxGoing, maxTotal)
	}

	// Reports uploaded through one replica open on the other: with a bearer token on the report
	// route, and through a report link from report-token.
	linked := 0
	for _, r := range runs {
		v := views[r.task]
		htmlURL, _ := strings.CutPrefix(v.str("execution", "htmlReportUrl"), publicURL)
		if htmlURL == "" {
			if r.image == passImage {
				t.Fatalf("%s: no HTML report: %s", r.task, v.raw)
			}
			continue
		}
		other := hs[1-uploadedTo[v.str("execution", "runner")]]
		a := bearer(admins[r.org].token)
		if rep := other.do("GET", htmlURL, a, nil); rep.status != 200 || !strings.Contains(rep.header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s: report on the other replica: %d %v", r.task, rep.status, rep.header)
		}
		if linked < 2 {
			got, _ := other.reportAccess(a, r.task)
			if res, body := fetch(t, noFollow, other.srv.URL, got.link); res.StatusCode != 200 || body == "" {
				t.Fatalf("%s: report link on the other replica: %d", r.task, res.StatusCode)
			}
			linked++
		}
	}
	if linked == 0 {
		t.Fatal("no run had an HTML report")
	}

	// Live logs crossed the replicas: the socket on replica 1 heard the whole log of every
	// watched run, those run through replica 0 too; and both SSE followers read the followed run.
	crossed := 0
	for _, r := range runs {
		if r.org != watched {
			continue
		}
		stored := hs[0].storedLog(bearer(admins[watched].token), r.task)
		var heard string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			sockMu.Lock()
			if b := sockLogs[r.task]; b != nil {
				heard = b.String()
			}
			sockMu.Unlock()
			if heard == stored || time.Now().After(deadline) {
				break
			}
		}
		if stored == "" || heard != stored {
			t.Fatalf("%s: the socket on replica 1 heard %d bytes of the %d stored:\n%s", r.task, len(heard), len(stored), heard)
		}
		if uploadedTo[views[r.task].str("execution", "runner")] == 0 {
			crossed++
		}
	}
	if crossed == 0 {
		t.Fatal("no watched run went through replica 0")
	}
	followStored := hs[0].storedLog(bearer(admins[runs[9].org].token), followTask)
	for i := range hs {
		select {
		case got := <-sseOut[i]:
			if got.status != "PASSED" || got.log != followStored {
				t.Fatalf("SSE on replica %d: %q, %d bytes of %d", i, got.status, len(got.log), len(followStored))
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the SSE follower on replica %d did not end", i)
		}
	}

	// A runner killed (SIGKILL) mid-run: its run ends ERROR within about a lease (the runner's
	// own, 30 s, which it asks for when it claims), and the other runner takes new work.
	a := bearer(admins[watched].token)
	lost := hs[0].queue(a, map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "600", "INTERVAL_MS": "100"}})
	running := hs[1].waitFor(a, lost, time.Minute, func(r resp) bool { return r.str("execution", "status") == "RUNNING" })
	for deadline := time.Now().Add(30 * time.Second); hs[1].storedLog(a, lost) == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow run wrote no log")
		}
	}
	victim := uploadedTo[running.str("execution", "runner")]
	if err := procs[victim].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procs[victim].exited
	killed := time.Now()
	ended := hs[1-victim].waitFor(a, lost, 45*time.Second, final)
	if ended.str("execution", "status") != "ERROR" || !strings.Contains(ended.str("execution", "error"), "runner lost") {
		t.Fatalf("the killed runner's run: %s", ended.raw)
	}
	t.Logf("runner %s killed; its run ended ERROR after %s", names[victim], time.Since(killed).Round(100*time.Millisecond))
	next := hs[victim].queue(a, map[string]any{"image": passImage})
	after := hs[victim].waitFor(a, next, 2*time.Minute, final)
	if after.str("execution", "status") != "PASSED" || after.str("execution", "runner") != peerhttp.RunnerID(names[1-victim]) {
		t.Fatalf("the run after the kill: %s", after.raw)
	}
	// The servers, which run no suite, opened no engine: the killed runner's container and
	// network sandboxes are still on its engine until the runner, started again under its
	// name, removes them.
	leftovers := func(label string) int {
		t.Helper()
		f := make(client.Filters)
		f.Add("label", label+"=true")
		f.Add("label", run.LabelRunner+"="+peerhttp.RunnerID(names[victim]))
		left, err := dockerenv.Client(t).ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		return len(left.Items)
	}
	if n := leftovers(docker.LabelSandbox); n == 0 {
		t.Fatal("the lost runner's sandboxes are gone before it started again: the server touched its engine")
	}
	again := startRunnerProcess(t, hs[victim].srv.URL, names[victim])
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(again.stderr.String(), "verdict runner started"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start again:\n%s", names[victim], again.stderr.String())
		}
	}
	if s, c := leftovers(docker.LabelSandbox), leftovers(run.LabelManaged); s != 0 || c != 0 {
		t.Fatalf("%s started again and left its earlier life's %d sandboxes and %d containers", names[victim], s, c)
	}
}
