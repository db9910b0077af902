//go:build integration

package app_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"verdict/internal/domain"
	"verdict/internal/testenv/kubeenv"
)

// TestKubernetesBackendEndToEnd: with VERDICT_BACKEND=kubernetes the service runs the sample
// suites as Jobs on a real single-node cluster, with the same verdicts, tests, reports, logs,
// cancels and errors as on Docker, and leaves no Job, pod or Secret behind.
func TestKubernetesBackendEndToEnd(t *testing.T) {
	k := kubeenv.Cluster(t)
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 3 * time.Second, env: map[string]string{
		"VERDICT_BACKEND": "kubernetes", "KUBECONFIG": k.Kubeconfig, "VERDICT_K8S_NAMESPACE": k.Namespace,
		"VERDICT_K8S_HELPER_IMAGE": kubeenv.HelperImage, "VERDICT_K8S_PULL_POLICY": "Never", "VERDICT_K8S_START_TIMEOUT": "20s",
		"VERDICT_RUN_MEMORY_MB": "256", "VERDICT_RUN_CPUS": "0.5",
	}})
	admin := h.signup("kube@example.com", "Kube Co")
	a := bearer(admin.token)

	// A passing suite of a project with a secret variable: verdict, tests, report and log (the
	// secret masked), as on Docker.
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage,
		"envVars": []any{map[string]any{"key": "SECRET_TOKEN", "value": "hush-77", "secret": true}}})
	expect(t, p, 201, "")
	pass := h.queue(a, map[string]any{"projectId": p.str("project", "id"), "taskId": "k8s-pass"})
	r := h.waitFor(a, pass, 2*time.Minute, final)
	if r.str("execution", "status") != "PASSED" || r.get("execution", "summary", "total") != 4.0 || len(r.get("execution", "tests").([]any)) != 4 {
		t.Fatalf("passing run: %s", r.raw)
	}
	htmlURL, _ := strings.CutPrefix(r.str("execution", "htmlReportUrl"), publicURL)
	if rep := h.do("GET", htmlURL, a, nil); rep.status != 200 || !strings.Contains(rep.header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("report %s: %d %.200s", htmlURL, rep.status, rep.raw)
	}
	logs := h.do("GET", "/api/executions/"+pass+"/logs", a, nil).str("logs")
	if !strings.Contains(logs, "4 tests, 0 failed") || !strings.Contains(logs, "TASK_ID=k8s-pass") || strings.Contains(logs, "hush-77") ||
		!strings.Contains(logs, "SECRET_TOKEN=********") {
		t.Fatalf("logs:\n%s", logs)
	}

	// A failing suite fails; its failed tests are listed.
	fail := h.queue(a, map[string]any{"image": failImage})
	r = h.waitFor(a, fail, 2*time.Minute, final)
	if r.str("execution", "status") != "FAILED" || r.get("execution", "summary", "failed").(float64) < 1 {
		t.Fatalf("failing run: %s", r.raw)
	}

	// An image the node does not have: ERROR with the kubelet's reason.
	missing := h.queue(a, map[string]any{"image": "verdict-examples/does-not-exist:latest"})
	r = h.waitFor(a, missing, time.Minute, final)
	if r.str("execution", "status") != "ERROR" || !strings.Contains(r.str("execution", "error"), "could not be pulled") {
		t.Fatalf("missing image: %s", r.raw)
	}

	// Cancel deletes the running pod: CANCELLED.
	sleeper := h.queue(a, map[string]any{"image": slowImage, "folder": "sleep"})
	h.waitFor(a, sleeper, time.Minute, func(r resp) bool {
		return strings.Contains(h.do("GET", "/api/executions/"+sleeper+"/logs", a, nil).str("logs"), "sleeping until stopped")
	})
	expect(t, h.do("POST", "/api/executions/"+sleeper+"/cancel", a, nil), 200, "")
	if r = h.waitFor(a, sleeper, time.Minute, final); r.str("execution", "status") != "CANCELLED" {
		t.Fatalf("cancel: %s", r.raw)
	}

	// The image's test folders, read by a Job.
	if ts := h.do("GET", "/api/tests-structure?image="+passImage, a, nil); !strings.Contains(ts.raw, `"api"`) || !strings.Contains(ts.raw, `"ui"`) {
		t.Fatalf("tests-structure: %s", ts.raw)
	}

	// The runner installed the policy that keeps runs apart and off the metadata service.
	np, err := k.Client.NetworkingV1().NetworkPolicies(k.Namespace).Get(context.Background(), "verdict-runs", metav1.GetOptions{})
	if err != nil || len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 1 || len(np.Spec.Egress[0].To) == 0 ||
		strings.Join(np.Spec.Egress[0].To[0].IPBlock.Except, ",") != "169.254.0.0/16" {
		t.Fatalf("runs' NetworkPolicy: %+v %v", np, err)
	}

	// Every run removed its Job; the Secrets went with them.
	waitNothingLeft(t, k)
}

// TestKubernetesRemoteRunner: `verdict runner` with VERDICT_BACKEND=kubernetes serves a server
// that runs nothing itself; the server lists it as a Kubernetes runner; killed mid-run, its run
// ends ERROR within a lease, and the runner, started again under its name, deletes the run's Job
// (the server, given the same cluster settings, opens no backend and touches no Job).
func TestKubernetesRemoteRunner(t *testing.T) {
	k := kubeenv.Cluster(t)
	kubeEnv := map[string]string{"VERDICT_BACKEND": "kubernetes", "KUBECONFIG": k.Kubeconfig, "VERDICT_K8S_NAMESPACE": k.Namespace,
		"VERDICT_K8S_HELPER_IMAGE": kubeenv.HelperImage, "VERDICT_K8S_PULL_POLICY": "Never",
		"VERDICT_RUN_MEMORY_MB": "256", "VERDICT_RUN_CPUS": "0.5"}
	env := map[string]string{"VERDICT_RUNNER": "none", "VERDICT_RUNNER_SECRET": runnerSecret}
	var runnerEnv []string
	for key, v := range kubeEnv {
		env[key] = v
		runnerEnv = append(runnerEnv, key+"="+v)
	}
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, env: env})
	proc := startRunnerProcess(t, h.srv.URL, "kube-runner", runnerEnv...)
	admin := h.signup("kube-remote@example.com", "Kube Remote Co")
	a := bearer(admin.token)

	pass := h.queue(a, map[string]any{"image": passImage})
	r := h.waitFor(a, pass, 2*time.Minute, final)
	if r.str("execution", "status") != "PASSED" || r.str("execution", "runner") != "remote:kube-runner" ||
		r.get("execution", "summary", "passed") != 4.0 {
		t.Fatalf("run on the Kubernetes runner: %s\nrunner said:\n%s", r.raw, proc.stderr.String())
	}
	runners := h.do("GET", "/api/runners", a, nil)
	if !strings.Contains(runners.raw, `"backend":"kubernetes"`) || !strings.Contains(runners.raw, `"name":"kube-runner"`) {
		t.Fatalf("runners: %s", runners.raw)
	}

	// Killed mid-run: ERROR once the lease lapses; the Job is left to its runner.
	sleeper := h.queue(a, map[string]any{"image": slowImage, "folder": "sleep"})
	h.waitFor(a, sleeper, time.Minute, func(r resp) bool {
		return strings.Contains(h.do("GET", "/api/executions/"+sleeper+"/logs", a, nil).str("logs"), "sleeping until stopped")
	})
	_ = proc.cmd.Process.Kill()
	r = h.waitFor(a, sleeper, time.Minute, final)
	if r.str("execution", "status") != "ERROR" || !strings.Contains(r.str("execution", "error"), "runner lost") {
		t.Fatalf("run of the killed runner: %s", r.raw)
	}
	jobs, err := k.Client.BatchV1().Jobs(k.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(jobs.Items) != 1 {
		t.Fatalf("the lost run's Job, before its runner is back: %d jobs, %v", len(jobs.Items), err)
	}
	// Started again (once the server gives it its name back), it deletes the Job (and its Secret).
	again := startRunnerProcess(t, h.srv.URL, "kube-runner", runnerEnv...)
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(again.stderr.String(), "verdict runner started"); {
		if time.Now().After(deadline) {
			t.Fatalf("the runner did not start again:\n%s", again.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitNothingLeft(t, k)
}

// waitNothingLeft waits until the test's namespace holds no Job and no Secret.
func waitNothingLeft(t *testing.T, k *kubeenv.Kube) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		jobs, err := k.Client.BatchV1().Jobs(k.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secrets, err := k.Client.CoreV1().Secrets(k.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs.Items) == 0 && len(secrets.Items) == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("left behind: %d jobs, %d secrets", len(jobs.Items), len(secrets.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkKubernetesDrain queues VERDICT_BENCH_K8S_RUNS (20) runs of the pass image at once for
// an enterprise organization on a runner with 4 slots, on the test cluster's one node, and then
// on the Docker engine of the same machine, and reports the wall time per run of each and
// their ratio: what a Job (scheduling, a pod sandbox, the report keeper, the exec that copies
// the reports) costs over a container.
func BenchmarkKubernetesDrain(b *testing.B) {
	k := kubeenv.Cluster(b)
	n := 20
	if v, err := strconv.Atoi(os.Getenv("VERDICT_BENCH_K8S_RUNS")); err == nil && v > 0 {
		n = v
	}
	drain := func(env map[string]string) float64 {
		env["VERDICT_RUNNER_SLOTS"] = "4"
		h := newHarness(b, harnessOpts{dialect: "sqlite", realClock: true, workers: true, env: env})
		admin := h.signup(fmt.Sprintf("drain-%d@example.com", time.Now().UnixNano()), "Drain Co")
		if err := h.app.Store.Organizations().UpdatePlan(context.Background(), admin.orgID, domain.PlanEnterprise, domain.Billing{}); err != nil {
			b.Fatal(err)
		}
		a := bearer(admin.token)
		t0 := time.Now()
		tasks := make([]string, n)
		for i := range tasks {
			tasks[i] = h.queue(a, map[string]any{"image": passImage})
		}
		for _, task := range tasks {
			if r := h.waitFor(a, task, 10*time.Minute, final); r.str("execution", "status") != "PASSED" {
				b.Fatalf("run %s: %s", task, r.raw)
			}
		}
		return time.Since(t0).Seconds() / float64(n)
	}
	var kube, dock float64
	for range b.N {
		kube += drain(map[string]string{"VERDICT_BACKEND": "kubernetes", "KUBECONFIG": k.Kubeconfig,
			"VERDICT_K8S_NAMESPACE": k.Namespace, "VERDICT_K8S_HELPER_IMAGE": kubeenv.HelperImage,
			"VERDICT_K8S_PULL_POLICY": "Never", "VERDICT_RUN_MEMORY_MB": "256", "VERDICT_RUN_CPUS": "0.5"})
		dock += drain(map[string]string{"VERDICT_RUN_MEMORY_MB": "256", "VERDICT_RUN_CPUS": "0.5"})
	}
	b.ReportMetric(kube/float64(b.N), "s/run-kubernetes")
	b.ReportMetric(dock/float64(b.N), "s/run-docker")
	b.ReportMetric(kube/dock, "kubernetes/docker")
}
