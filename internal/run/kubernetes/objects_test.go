package kubernetes

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"verdict/internal/run"
)

func testSpec() run.Spec {
	return run.Spec{Name: "verdict-abc", Image: "suite:1", Args: []string{"all"},
		Env:        map[string]string{"TOKEN": "s3cret", "BASE_URL": "http://app"},
		Labels:     map[string]string{run.LabelManaged: "true", run.LabelRunner: "embedded:host:/var/lib/verdict", run.LabelTask: "t-1"},
		Timeout:    90 * time.Second,
		ReportDirs: []string{"junit", "playwright-report"}}
}

// The Job is the container contract under Kubernetes' rules: one try, the run's deadline, no
// privilege, no token, the variables from the Secret only, a volume per report folder.
func TestJobFor(t *testing.T) {
	o := Options{Namespace: "runs", HelperImage: "verdict:1", HelperCommand: "/verdict", PullPolicy: corev1.PullIfNotPresent}
	job := jobFor(testSpec(), o, run.Resources{MemoryBytes: 1 << 30, NanoCPUs: 2e9})
	js := job.Spec
	if *js.BackoffLimit != 0 || *js.ActiveDeadlineSeconds != 90+collectMargin || *js.TTLSecondsAfterFinished != ttlAfterFinished {
		t.Fatalf("job spec: backoff %d deadline %d ttl %d", *js.BackoffLimit, *js.ActiveDeadlineSeconds, *js.TTLSecondsAfterFinished)
	}
	ps := js.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever || *ps.AutomountServiceAccountToken || *ps.EnableServiceLinks ||
		ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod spec: %+v", ps)
	}
	if len(ps.Containers) != 2 || ps.Containers[0].Name != suiteContainer || ps.Containers[1].Name != keeperContainer {
		t.Fatalf("containers: %+v", ps.Containers)
	}
	for _, c := range ps.Containers {
		sc := c.SecurityContext
		if *sc.Privileged || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
			sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: security context %+v", c.Name, sc)
		}
		if len(c.Env) != 0 {
			t.Errorf("%s: variables in the Job's own spec: %v", c.Name, c.Env)
		}
		if len(c.VolumeMounts) != 2 || c.VolumeMounts[0].MountPath != "/app/junit" || c.VolumeMounts[1].MountPath != "/app/playwright-report" {
			t.Errorf("%s: mounts %+v", c.Name, c.VolumeMounts)
		}
	}
	suite, keeper := ps.Containers[0], ps.Containers[1]
	if suite.Image != "suite:1" || suite.Command != nil || strings.Join(suite.Args, " ") != "all" ||
		suite.EnvFrom[0].SecretRef.Name != "verdict-abc" || suite.VolumeMounts[0].ReadOnly {
		t.Fatalf("suite: %+v", suite)
	}
	if keeper.Image != "verdict:1" || strings.Join(keeper.Command, " ") != "/verdict reports-keeper hold" || !keeper.VolumeMounts[0].ReadOnly {
		t.Fatalf("keeper: %+v", keeper)
	}
	lim, req := suite.Resources.Limits, suite.Resources.Requests
	if lim.Memory().Value() != 1<<30 || req.Memory().Value() != 1<<30 || lim.Cpu().MilliValue() != 2000 || req.Cpu().MilliValue() != 500 {
		t.Fatalf("resources: %v", suite.Resources)
	}
	if _, ok := lim[corev1.ResourceEphemeralStorage]; ok {
		t.Fatalf("a disk bound without DiskLimitBytes: %v", suite.Resources)
	}
	// The disk bound is a limit, not a reservation.
	o.DiskLimitBytes = 512 << 20
	bounded := jobFor(testSpec(), o, run.Resources{}).Spec.Template.Spec.Containers[0].Resources
	if lim, req := bounded.Limits[corev1.ResourceEphemeralStorage], bounded.Requests[corev1.ResourceEphemeralStorage]; lim.Value() != 512<<20 || !req.IsZero() {
		t.Fatalf("disk bound: limit %v request %v", lim.String(), req.String())
	}
	// The runner ID is no label value Kubernetes takes: hashed, and kept whole in annotations.
	if v := job.Labels[run.LabelRunner]; !strings.HasPrefix(v, "h-") || len(validation.IsValidLabelValue(v)) != 0 {
		t.Fatalf("runner label %q", v)
	}
	if got := givenLabels(job.Annotations); got[run.LabelRunner] != "embedded:host:/var/lib/verdict" || got[run.LabelTask] != "t-1" {
		t.Fatalf("labels back: %v", got)
	}
	if secret := secretFor(testSpec(), "runs"); secret.StringData["TOKEN"] != "s3cret" || secret.Namespace != "runs" {
		t.Fatalf("secret: %+v", secret)
	}
}

// FuzzLabelValue: whatever a label is given, Kubernetes accepts the value stored, and two
// different values never store the same.
func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"", "true", "embedded:host:/data", strings.Repeat("a", 64), "-x-", "ü"} {
		f.Add(s, s+"x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		la, lb := labelValue(a), labelValue(b)
		if errs := validation.IsValidLabelValue(la); len(errs) != 0 {
			t.Fatalf("%q stored as %q: %v", a, la, errs)
		}
		if a != b && la == lb {
			t.Fatalf("%q and %q both stored as %q", a, b, la)
		}
	})
}

// observe reads a pod's status as a kubelet writes it.
func TestObserve(t *testing.T) {
	status := func(s corev1.ContainerState, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{
			{Name: keeperContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: suiteContainer, State: s}}}}
	}
	unschedulable := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient memory."}}}}
	for _, c := range []struct {
		name   string
		pod    *corev1.Pod
		phase  phase
		exit   int
		reason string
	}{
		{"exited", status(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}, corev1.PodRunning), exited, 3, ""},
		{"running", status(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, corev1.PodRunning), running, 0, ""},
		{"pull", status(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}, corev1.PodPending), unstarted, 0, "ErrImagePull: not found"},
		{"never", status(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}, corev1.PodPending), unstarted, 0, "ErrImageNeverPull"},
		{"creating", status(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}, corev1.PodPending), waiting, 0, "ContainerCreating"},
		{"deadline", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "too long"}}, failed, 0, "DeadlineExceeded: too long"},
		{"unschedulable", unschedulable, waiting, 0, "Unschedulable: 0/1 nodes are available: 1 Insufficient memory."},
		{"pending", &corev1.Pod{}, waiting, 0, "the pod is pending"},
		{"evicted", evicted("Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. "), failed, 0, "Evicted: Pod ephemeral local storage usage exceeds the total limit of containers 10Mi."},
		{"evicted for memory", evicted("The node was low on resource: memory. "), failed, 0, "Evicted: The node was low on resource: memory."},
	} {
		got := observe(c.pod)
		if got.phase != c.phase || got.exit != c.exit || (c.reason != "" && got.reason != c.reason) {
			t.Errorf("%s: %+v", c.name, got)
		}
		if over := strings.Contains(c.reason, "ephemeral"); got.overDisk != over {
			t.Errorf("%s: overDisk %v", c.name, got.overDisk)
		}
	}
	// The kubelet's words for each storage limit it enforces.
	for msg, want := range map[string]bool{
		"Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ": true,
		"Container suite exceeded its local ephemeral storage limit \"10Mi\". ":          true,
		"Usage of EmptyDir volume \"report-0\" exceeds the limit \"10Mi\". ":             true,
		"The node was low on resource: ephemeral-storage. ":                              false,
		"The node was low on resource: memory. ":                                         false,
	} {
		if overDisk(msg) != want {
			t.Errorf("overDisk(%q) = %v", msg, !want)
		}
	}
}

// evicted is a pod the kubelet evicted: its containers killed, the reason on the pod.
func evicted(message string) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: message,
		ContainerStatuses: []corev1.ContainerStatus{{Name: suiteContainer, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown"}}}}}}
}

// The keeper's tar is what the Docker engine's copy gives: entries under the folder's base
// name, links kept as links, and a missing folder is exit 3 before any byte.
func TestKeeperTar(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	must(t, os.MkdirAll(filepath.Join(app, "junit", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(app, "junit", "results.xml"), []byte("<testsuites/>"), 0o644))
	must(t, os.WriteFile(filepath.Join(app, "junit", "deep", "a.txt"), []byte("a"), 0o644))
	must(t, os.Symlink("/etc/passwd", filepath.Join(app, "junit", "link")))
	var out, errOut bytes.Buffer
	if code := KeeperMain([]string{"tar", app}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	got := map[string]string{}
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		body, _ := io.ReadAll(tr)
		got[h.Name] = string(body) + h.Linkname
	}
	want := map[string]string{"app/": "", "app/junit/": "", "app/junit/results.xml": "<testsuites/>",
		"app/junit/deep/": "", "app/junit/deep/a.txt": "a", "app/junit/link": "/etc/passwd"}
	if len(got) != len(want) {
		t.Fatalf("entries %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	out.Reset()
	if code := KeeperMain([]string{"tar", filepath.Join(dir, "missing")}, &out, &errOut); code != exitPathNotFound || out.Len() != 0 {
		t.Fatalf("missing folder: exit %d, %d bytes", code, out.Len())
	}
	if code := KeeperMain([]string{"ls", app}, &out, &errOut); code != 0 || out.String() != "junit\n" {
		t.Fatalf("ls: exit %d %q", code, out.String())
	}
	if code := KeeperMain([]string{"tar"}, &out, &errOut); code != 2 {
		t.Fatalf("usage: exit %d", code)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
