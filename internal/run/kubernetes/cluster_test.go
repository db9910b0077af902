package kubernetes_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/run/kubernetes"
	"verdict/internal/testenv"
	"verdict/internal/testenv/kubeenv"
)

// The sample suites (examples/suites), loaded into the test node by scripts/kube-cluster.sh.
const (
	imagePass = "verdict-examples/pass:latest"
	imageFail = "verdict-examples/fail:latest"
	imageSlow = "verdict-examples/slow:latest"
)

func newBackend(t *testing.T, k *kubeenv.Kube, o kubernetes.Options) *kubernetes.Backend {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	o.Namespace = k.Namespace
	if o.HelperImage == "" {
		o.HelperImage = kubeenv.HelperImage
	}
	b, err := kubernetes.NewForConfig(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func spec(image string, args ...string) run.Spec {
	return run.Spec{Name: "verdict-" + domain.RandomHex(6), Image: image, Args: args,
		Env:        map[string]string{"BASE_URL": "http://target.test:8080", "TASK_ID": "t-k8s", "CI": "true", "FRAMEWORK_AGNOSTIC": "true", "SECRET_TOKEN": "s3cret"},
		Labels:     map[string]string{run.LabelManaged: "true", run.LabelRunner: "embedded:host:/var/lib/verdict", run.LabelTask: "t-k8s"},
		Timeout:    5 * time.Minute,
		ReportDirs: run.ReportFolders(domain.DefaultReportFolders)}
}

// A passing sample suite runs as a Job on the real node: its log is followed through the API
// server, its exit code read from the pod's status, its reports copied out of the keeper
// after it exited; the API server took the Job and the Secret as Verdict wrote them, and
// Remove takes both away.
func TestSuiteRunsAsAJob(t *testing.T) {
	t.Parallel()
	k := kubeenv.Cluster(t)
	b := newBackend(t, k, kubernetes.Options{})
	ctx := ctxFor(t, 3*time.Minute)
	if err := b.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	s := spec(imagePass, "all")
	id, err := b.Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Remove(context.Background(), id) })

	// As stored by the API server: one try, the deadline, no token, no privilege; the
	// variables only in the Secret, which the Job owns.
	job, err := k.Client.BatchV1().Jobs(k.Namespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps := job.Spec.Template.Spec
	if *job.Spec.BackoffLimit != 0 || *job.Spec.ActiveDeadlineSeconds < 300 || *ps.AutomountServiceAccountToken ||
		*ps.Containers[0].SecurityContext.AllowPrivilegeEscalation || ps.Containers[0].SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Fatalf("stored job: %+v", job.Spec)
	}
	if strings.Contains(job.String(), "s3cret") {
		t.Fatal("the Job's own spec holds a variable's value")
	}
	secret, err := k.Client.CoreV1().Secrets(k.Namespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["SECRET_TOKEN"]) != "s3cret" || len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != job.UID {
		t.Fatalf("secret: owners %+v", secret.OwnerReferences)
	}
	if got, err := b.List(ctx, map[string]string{run.LabelRunner: "embedded:host:/var/lib/verdict"}); err != nil || len(got) != 1 ||
		got[0].ID != id || got[0].Labels[run.LabelTask] != "t-k8s" {
		t.Fatalf("List = %+v, %v", got, err)
	}

	logs, err := b.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(logs) // ends when the suite exits
	logs.Close()
	code, err := b.Wait(ctx, id)
	if err != nil || code != 0 {
		t.Fatalf("Wait = %d, %v; log:\n%s", code, err, out)
	}
	for _, want := range []string{"BASE_URL=http://target.test:8080 TASK_ID=t-k8s CI=true FRAMEWORK_AGNOSTIC=true", "4 tests, 0 failed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	rc, err := b.CopyOut(ctx, id, "/app")
	if err != nil {
		t.Fatal(err)
	}
	files := testenv.Untar(t, rc)
	if !strings.Contains(files["app/junit/results.xml"], `tests="4"`) || files["app/playwright-report/index.html"] == "" {
		var names []string
		for n := range files {
			names = append(names, n)
		}
		t.Fatalf("copied reports: %v", names)
	}
	if _, err := b.CopyOut(ctx, id, "/app/missing"); !errors.Is(err, run.ErrPathNotFound) {
		t.Fatalf("CopyOut of a missing folder: %v", err)
	}

	if err := b.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Client.CoreV1().Secrets(k.Namespace).Get(ctx, id, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Secret outlived Remove: %v", err)
	}
	if got, err := b.List(ctx, map[string]string{run.LabelTask: "t-k8s"}); err != nil || len(got) != 0 {
		t.Fatalf("after Remove, List = %+v, %v", got, err)
	}
}

// A failing suite's exit code comes through as it is.
func TestFailingSuiteExitCode(t *testing.T) {
	t.Parallel()
	k := kubeenv.Cluster(t)
	b := newBackend(t, k, kubernetes.Options{})
	ctx := ctxFor(t, 3*time.Minute)
	id, err := b.Start(ctx, spec(imageFail, "all"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(context.Background(), id)
	if code, err := b.Wait(ctx, id); err != nil || code == 0 {
		t.Fatalf("Wait = %d, %v", code, err)
	}
}

// Stop ends a suite that would run on: SIGTERM, then the pod is gone and Wait returns.
func TestStopEndsTheRun(t *testing.T) {
	t.Parallel()
	k := kubeenv.Cluster(t)
	b := newBackend(t, k, kubernetes.Options{})
	ctx := ctxFor(t, 3*time.Minute)
	id, err := b.Start(ctx, spec(imageSlow, "sleep"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(context.Background(), id)
	logs, err := b.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	// The suite has started once it printed its variables.
	sc := bufio.NewScanner(logs)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "sleeping") {
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	if err := b.Stop(ctx, id, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := b.Wait(wctx, id); err != nil && errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait after Stop did not return: %v", err)
	}
}

// A suite writing past the disk bound has its pod evicted by the kubelet, and Wait says why: the
// bound is the suite container's ephemeral-storage limit, and report folders count.
func TestDiskLimitEvicts(t *testing.T) {
	t.Parallel()
	k := kubeenv.Cluster(t)
	b := newBackend(t, k, kubernetes.Options{DiskLimitBytes: 10 << 20})
	ctx := ctxFor(t, 3*time.Minute)
	s := spec(imageSlow, "sleep")
	s.Env["FILL_MB"], s.Env["FILL_PATH"] = "40", "/app/junit/fill"
	id, err := b.Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(context.Background(), id)
	began := time.Now()
	code, err := b.Wait(ctx, id)
	if !errors.Is(err, run.ErrDiskLimit) {
		t.Fatalf("Wait = %d, %v; want ErrDiskLimit", code, err)
	}
	t.Logf("evicted after %v: %v", time.Since(began).Round(time.Second), err)
}

// An image the node cannot have ends the run at once with the kubelet's reason; a pod that
// cannot be scheduled ends it after StartTimeout with the scheduler's.
func TestUnstartableRuns(t *testing.T) {
	t.Parallel()
	k := kubeenv.Cluster(t)
	b := newBackend(t, k, kubernetes.Options{StartTimeout: 5 * time.Second, PullPolicy: corev1.PullNever})
	ctx := ctxFor(t, 2*time.Minute)

	id, err := b.Start(ctx, spec("verdict-examples/absent:1", "all"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(context.Background(), id)
	_, err = b.Wait(ctx, id)
	if !errors.Is(err, run.ErrNotStarted) || !strings.Contains(err.Error(), `image "verdict-examples/absent:1" could not be pulled`) ||
		!strings.Contains(err.Error(), "ErrImageNeverPull") {
		t.Fatalf("Wait with an absent image: %v", err)
	}

	huge := spec(imagePass, "all")
	huge.Resources = run.Resources{MemoryBytes: 1 << 50}
	id2, err := b.Start(ctx, huge)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(context.Background(), id2)
	_, err = b.Wait(ctx, id2)
	if !errors.Is(err, run.ErrNotStarted) || !strings.Contains(err.Error(), "Insufficient memory") {
		t.Fatalf("Wait with a pod too big for every node: %v", err)
	}
}

// ListDir reads an image's folders with the verdict binary copied in: the image needs no ls.
func TestListDir(t *testing.T) {
	t.Parallel()
	k := kubeenv.Cluster(t)
	b := newBackend(t, k, kubernetes.Options{})
	ctx := ctxFor(t, 2*time.Minute)
	dirs, err := b.ListDir(ctx, imagePass, "/app/tests", false)
	if err != nil || strings.Join(dirs, ",") != "api,ui" {
		t.Fatalf("ListDir = %v, %v", dirs, err)
	}
	if _, err := b.ListDir(ctx, imagePass, "/app/none", false); !errors.Is(err, run.ErrPathNotFound) {
		t.Fatalf("ListDir of a missing folder: %v", err)
	}
	if _, err := b.ListDir(ctx, "verdict-examples/absent:1", "/app/tests", false); !errors.Is(err, run.ErrImageNotFound) {
		t.Fatalf("ListDir of an absent image: %v", err)
	}
}

// EnsureNetwork installs the NetworkPolicy that keeps runs apart (no ingress to a run's pod)
// and away from the blocked destinations, as the real API server validates and stores it, and
// brings it up to date when the blocked list changes.
func TestRunsNetworkPolicy(t *testing.T) {
	t.Parallel()
	k := kubeenv.Cluster(t)
	ctx := ctxFor(t, time.Minute)
	blocked := []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fd00:ec2::254/128")}
	b := newBackend(t, k, kubernetes.Options{BlockedNets: blocked})
	if err := b.EnsureNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	np, err := k.Client.NetworkingV1().NetworkPolicies(k.Namespace).Get(ctx, "verdict-runs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp := np.Spec
	if sp.PodSelector.MatchLabels["app.kubernetes.io/managed-by"] != "verdict" || len(sp.PolicyTypes) != 2 || len(sp.Ingress) != 0 ||
		len(sp.Egress) != 1 || len(sp.Egress[0].To) != 2 ||
		sp.Egress[0].To[0].IPBlock.CIDR != "0.0.0.0/0" || strings.Join(sp.Egress[0].To[0].IPBlock.Except, ",") != "169.254.0.0/16" ||
		sp.Egress[0].To[1].IPBlock.CIDR != "::/0" || strings.Join(sp.Egress[0].To[1].IPBlock.Except, ",") != "fd00:ec2::254/128" {
		t.Fatalf("policy: %+v", sp)
	}
	// Nothing blocked: egress anywhere, ingress still none.
	open := newBackend(t, k, kubernetes.Options{})
	if err := open.EnsureNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	np, err = k.Client.NetworkingV1().NetworkPolicies(k.Namespace).Get(ctx, "verdict-runs", metav1.GetOptions{})
	if err != nil || len(np.Spec.Egress) != 1 || len(np.Spec.Egress[0].To) != 0 || len(np.Spec.Ingress) != 0 {
		t.Fatalf("policy without blocked destinations: %+v %v", np.Spec, err)
	}
}
