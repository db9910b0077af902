// Package kubernetes is the Kubernetes backend: a run is a Job of one pod, never retried, in one
// namespace. The pod holds two containers: the suite, with the run's variables from a Secret
// owned by the Job, and the report keeper, the verdict binary from the helper image, which mounts
// the suite's report folders (an emptyDir each) and holds them after the suite exits, until the
// runner copies them out through an exec. Suite images need nothing of their own for that: no
// tar, no shell; they may be FROM scratch.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"verdict/internal/run"
)

// Options configure the backend.
type Options struct {
	Namespace string // where the runs' Jobs go [default]
	// HelperImage holds the verdict binary at HelperCommand: the report keeper of every run
	// and the folder lister of ListDir. The same image as the server's, at the same version.
	HelperImage   string
	HelperCommand string            // [/verdict]
	PullPolicy    corev1.PullPolicy // [IfNotPresent]
	// StartTimeout bounds how long a run's pod may wait to be scheduled and started (a cluster
	// autoscaler may add a node meanwhile) before the run ends ERROR with the reason [2m].
	StartTimeout     time.Duration
	DefaultResources run.Resources
	// DiskLimitBytes bounds what a run's suite writes to its pod's local storage (its writable
	// layer, its log and its report folders), 0 for no bound: the suite container's
	// ephemeral-storage limit. The kubelet evicts a pod past it, and Wait says run.ErrDiskLimit.
	DiskLimitBytes int64
	// BlockedNets are destinations no run may reach, kept out by the runs' NetworkPolicy.
	BlockedNets []netip.Prefix
	Log         *slog.Logger
}

// Backend runs suites as Jobs through the Kubernetes API.
type Backend struct {
	cs   kubernetes.Interface
	rest *rest.Config
	o    Options
}

// New connects to the cluster: with kubeconfig empty, the in-cluster configuration of the pod
// Verdict runs in; else that kubeconfig file's current context.
func New(kubeconfig string, o Options) (*Backend, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes configuration: %w", err)
	}
	return NewForConfig(cfg, o)
}

// NewForConfig connects with a ready client configuration.
func NewForConfig(cfg *rest.Config, o Options) (*Backend, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "verdict"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.HelperCommand == "" {
		o.HelperCommand = "/verdict"
	}
	if o.PullPolicy == "" {
		o.PullPolicy = corev1.PullIfNotPresent
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	quietClientGo(o.Log)
	if o.HelperImage == "" {
		return nil, errors.New("a helper image (the verdict image) is needed for the report keeper")
	}
	return &Backend{cs: cs, rest: cfg, o: o}, nil
}

// Name is "kubernetes", as VERDICT_BACKEND names it.
func (b *Backend) Name() string { return "kubernetes" }

// Ping reports whether the API server answers and lets Verdict list Jobs in its namespace.
func (b *Backend) Ping(ctx context.Context) error {
	_, err := b.cs.BatchV1().Jobs(b.o.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// EnsureImage leaves images to the kubelet, which pulls them by PullPolicy when the pod starts;
// an image it cannot have ends the run in Wait, with the kubelet's reason.
func (b *Backend) EnsureImage(context.Context, string) error { return nil }

// Start creates the run's Secret and Job, and hands the Secret to the Job, so that deleting the
// Job deletes it too. It leaves nothing behind when it fails.
func (b *Backend) Start(ctx context.Context, spec run.Spec) (string, error) {
	res := spec.Resources
	if res == (run.Resources{}) {
		res = b.o.DefaultResources
	}
	secrets := b.cs.CoreV1().Secrets(b.o.Namespace)
	secret, err := secrets.Create(ctx, secretFor(spec, b.o.Namespace), metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating the run's secret: %w", err)
	}
	job, err := b.cs.BatchV1().Jobs(b.o.Namespace).Create(ctx, jobFor(spec, b.o, res), metav1.CreateOptions{})
	if err != nil {
		b.cleanup(spec.Name)
		return "", fmt.Errorf("creating the run's job: %w", err)
	}
	// No blockOwnerDeletion: it would need update on jobs/finalizers where the API server
	// enforces owner references' permissions, and Remove deletes the Secret itself anyway.
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID}}
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		b.cleanup(spec.Name)
		return "", fmt.Errorf("handing the run's secret to its job: %w", err)
	}
	return job.Name, nil
}

// cleanup removes what Start made, even when Start's context has ended.
func (b *Backend) cleanup(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Remove(ctx, name); err != nil {
		b.o.Log.Warn("removing a job that did not start failed", "job", name, "err", err)
	}
}

// selector picks the pods of Job id.
func selector(id string) string { return labels.Set{labelJobName: id}.String() }

// watchPod calls see with the run's pod (nil while the Job has none) whenever it changes, and
// on every tick, until see says done. It lists and then watches, listing again when a watch ends.
func (b *Backend) watchPod(ctx context.Context, id string, tick time.Duration, see func(*corev1.Pod) (bool, error)) error {
	pods := b.cs.CoreV1().Pods(b.o.Namespace)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return err
		}
		var pod *corev1.Pod
		if len(list.Items) > 0 {
			pod = &list.Items[0]
		}
		if done, err := see(pod); done || err != nil {
			return err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: selector(id), ResourceVersion: list.ResourceVersion})
		if err != nil {
			return err
		}
		done, err := func() (bool, error) {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return true, ctx.Err()
				case <-ticker.C:
					if done, err := see(pod); done || err != nil {
						return true, err
					}
				case ev, ok := <-w.ResultChan():
					if !ok {
						return false, nil // the watch ended: list again
					}
					switch ev.Type {
					case watch.Added, watch.Modified:
						pod, _ = ev.Object.(*corev1.Pod)
					case watch.Deleted:
						pod = nil
					case watch.Error:
						return false, nil
					}
					if done, err := see(pod); done || err != nil {
						return true, err
					}
				}
			}
		}()
		if done {
			return err
		}
	}
}

// errGone: the run's Job or pod was deleted from under it.
var errGone = errors.New("the run's job was deleted")

// untilStarted follows the run's pod until its suite container has started (running or
// exited). A pod that will never start it gives an error wrapping run.ErrNotStarted, with the
// reason from the pod's (or the Job's) events.
func (b *Backend) untilStarted(ctx context.Context, id string) (*corev1.Pod, observation, error) {
	deadline := time.Now().Add(b.o.StartTimeout)
	var last observation
	var seen *corev1.Pod
	err := b.watchPod(ctx, id, time.Second, func(pod *corev1.Pod) (bool, error) {
		if pod == nil {
			if job, err := b.cs.BatchV1().Jobs(b.o.Namespace).Get(ctx, id, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return true, errGone
			} else if err == nil && jobFailed(job) != "" && seen == nil {
				return true, fmt.Errorf("%w: %s", run.ErrNotStarted, b.why(ctx, "Job", id, "", jobFailed(job)))
			}
			if time.Now().After(deadline) {
				return true, fmt.Errorf("%w: no pod within %s: %s", run.ErrNotStarted, b.o.StartTimeout,
					b.why(ctx, "Job", id, "", "the job made no pod"))
			}
			return false, nil
		}
		seen = pod
		last = observe(pod)
		switch last.phase {
		case running, exited:
			return true, nil
		case unstarted:
			return true, fmt.Errorf("%w: image %q could not be pulled: %s", run.ErrNotStarted, last.image,
				b.why(ctx, "Pod", pod.Name, last.image, last.reason))
		case failed:
			return true, fmt.Errorf("%w: %s", run.ErrNotStarted, b.why(ctx, "Pod", pod.Name, "", last.reason))
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("%w: not started within %s: %s", run.ErrNotStarted, b.o.StartTimeout,
				b.why(ctx, "Pod", pod.Name, "", last.reason))
		}
		return false, nil
	})
	return seen, last, err
}

// jobFailed is the reason of a Job's Failed condition, empty while it has none.
func jobFailed(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return joinReason(c.Reason, c.Message)
		}
	}
	return ""
}

// minorEvents are warnings that never stop a pod: back-offs repeat an earlier failure, and a
// node without cluster DNS falls back to the host's.
var minorEvents = map[string]bool{"BackOff": true, "MissingClusterDNS": true, "DNSConfigForming": true}

// why is the newest warning event of the object (a failed pull says which registry answered
// what; a pod that cannot be scheduled, which nodes lack what), else fallback. Warnings whose
// message names about come first, minor ones last.
func (b *Backend) why(ctx context.Context, kind, name, about, fallback string) string {
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "type": corev1.EventTypeWarning}
	list, err := b.cs.CoreV1().Events(b.o.Namespace).List(ectx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil || len(list.Items) == 0 {
		return fallback
	}
	evs := list.Items
	rank := func(e corev1.Event) int {
		switch {
		case about != "" && strings.Contains(e.Message, about):
			return 0
		case minorEvents[e.Reason]:
			return 2
		}
		return 1
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if ri, rj := rank(evs[i]), rank(evs[j]); ri != rj {
			return ri < rj
		}
		return eventTime(evs[i]).After(eventTime(evs[j]))
	})
	return joinReason(evs[0].Reason, strings.TrimSpace(evs[0].Message))
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// Wait follows the run's pod until its suite container exits, and returns its exit code.
func (b *Backend) Wait(ctx context.Context, id string) (int, error) {
	if _, o, err := b.untilStarted(ctx, id); err != nil {
		return -1, err
	} else if o.phase == exited {
		return o.exit, nil
	}
	exit := -1
	err := b.watchPod(ctx, id, 30*time.Second, func(pod *corev1.Pod) (bool, error) {
		if pod == nil {
			return true, errGone
		}
		switch o := observe(pod); o.phase {
		case exited:
			exit = o.exit
			return true, nil
		case failed:
			if o.overDisk {
				return true, fmt.Errorf("%w: the kubelet evicted the run's pod: %s", run.ErrDiskLimit, o.reason)
			}
			return true, fmt.Errorf("the run's pod ended without the suite's exit: %s", o.reason)
		}
		return false, nil
	})
	return exit, err
}

// Logs follows the suite container's output (stdout and stderr as the kubelet interleaved them)
// from its start until it exits, as whole lines; a stream broken by an API server or kubelet
// restart is resumed where it broke.
func (b *Backend) Logs(ctx context.Context, id string) (io.ReadCloser, error) {
	pod, _, err := b.untilStarted(ctx, id)
	if err != nil {
		return nil, err
	}
	pods := b.cs.CoreV1().Pods(b.o.Namespace)
	open := func(ctx context.Context, since time.Time) (io.ReadCloser, error) {
		opts := &corev1.PodLogOptions{Container: suiteContainer, Follow: true, Timestamps: true}
		if !since.IsZero() {
			t := metav1.NewTime(since.Truncate(time.Second)) // the API takes whole seconds
			opts.SinceTime = &t
		}
		return pods.GetLogs(pod.Name, opts).Stream(ctx)
	}
	ended := func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err
		}
		if len(list.Items) == 0 {
			return true, nil // deleted: nothing more will come
		}
		ph := observe(&list.Items[0]).phase
		return ph == exited || ph == failed, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		lw := run.NewLineWriter(pw)
		err := followLogs(ctx, open, ended, lw)
		if ferr := lw.Flush(); err == nil {
			err = ferr
		}
		pw.CloseWithError(err)
	}()
	return &cancelReader{PipeReader: pr, cancel: cancel}, nil
}

// Exit codes of `verdict reports-keeper tar`.
const exitPathNotFound = 3

// CopyOut streams the folder at p as a tar from the run's report keeper: its report folders,
// which the keeper mounts where the suite wrote them. Only paths under the report folders hold
// anything; /app holds exactly them.
func (b *Backend) CopyOut(ctx context.Context, id, p string) (io.ReadCloser, error) {
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
	if err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, errGone
	}
	ex, err := b.executor(list.Items[0].Name, keeperContainer, []string{b.o.HelperCommand, "reports-keeper", "tar", p})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	var stderr strings.Builder
	first := make(chan error, 1)
	fw := &firstWrite{w: pw, first: first}
	go func() {
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: fw, Stderr: &limitedWriter{b: &stderr, n: 4 << 10}})
		var code exec.CodeExitError
		if errors.As(err, &code) && code.Code == exitPathNotFound {
			err = run.ErrPathNotFound
		} else if err != nil {
			err = fmt.Errorf("copying %s out of the report keeper: %w (%s)", p, err, strings.TrimSpace(stderr.String()))
		}
		select {
		case first <- err:
		default:
		}
		pw.CloseWithError(err)
	}()
	// A folder that is not there is told before any byte comes, as the Docker backend does.
	if err := <-first; err != nil {
		cancel()
		return nil, err
	}
	return &cancelReader{PipeReader: pr, cancel: cancel}, nil
}

// firstWrite signals first (once, with nil) when the stream's first bytes come.
type firstWrite struct {
	w     io.Writer
	first chan error
	sent  bool
}

func (f *firstWrite) Write(p []byte) (int, error) {
	if !f.sent {
		f.sent = true
		select {
		case f.first <- nil:
		default:
		}
	}
	return f.w.Write(p)
}

type cancelReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (c *cancelReader) Close() error {
	c.cancel()
	return c.PipeReader.Close()
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	b *strings.Builder
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// executor runs cmd in a container of pod through the API server: over WebSocket, or SPDY
// for an API server too old for it.
func (b *Backend) executor(pod, container string, cmd []string) (remotecommand.Executor, error) {
	req := b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.o.Namespace).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd,
		Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(b.rest, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(b.rest, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// Stop ends the run's pod, the suite getting SIGTERM and grace to exit. Kubernetes cannot stop
// one container of a pod, so the report keeper goes with it: a stopped run keeps no reports.
func (b *Backend) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int64(grace.Seconds())
	err := b.cs.CoreV1().Pods(b.o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &secs},
		metav1.ListOptions{LabelSelector: selector(id)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Remove deletes the run's Job with its pod, and its Secret (the garbage collector would, later).
func (b *Backend) Remove(ctx context.Context, id string) error {
	bg := metav1.DeletePropagationBackground
	err := b.cs.BatchV1().Jobs(b.o.Namespace).Delete(ctx, id, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err = b.cs.CoreV1().Secrets(b.o.Namespace).Delete(ctx, id, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// List returns the runs' Jobs carrying all of the given labels.
func (b *Backend) List(ctx context.Context, want map[string]string) ([]run.Container, error) {
	sel := labels.Set{labelManagedBy: managedBy}
	for k, v := range want {
		sel[k] = labelValue(v)
	}
	list, err := b.cs.BatchV1().Jobs(b.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	var out []run.Container
	for _, j := range list.Items {
		state := "running"
		if j.Status.CompletionTime != nil || jobFailed(&j) != "" {
			state = "exited"
		}
		out = append(out, run.Container{ID: j.Name, Labels: givenLabels(j.Annotations), State: state})
	}
	return out, nil
}

// ListDir lists the folders directly under p in image without running its own programs: a Job
// copies the verdict binary from the helper image into a volume, runs it from the image to
// list p, and is deleted. With pull false the image must be on the node already (pull policy
// Never).
func (b *Backend) ListDir(ctx context.Context, image, p string, pull bool) ([]string, error) {
	policy := b.o.PullPolicy
	if !pull {
		policy = corev1.PullNever
	}
	job, err := b.cs.BatchV1().Jobs(b.o.Namespace).Create(ctx, listJob(b.o, image, p, policy), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a job to list %s in %s: %w", p, image, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = b.Remove(dctx, job.Name)
	}()
	ctx, cancel := context.WithTimeout(ctx, b.o.StartTimeout)
	defer cancel()
	var exit int
	var podName string
	err = b.watchPod(ctx, job.Name, time.Second, func(pod *corev1.Pod) (bool, error) {
		if pod == nil {
			return false, nil // the Job controller has not made it yet
		}
		podName = pod.Name
		switch o := observe(pod); o.phase {
		case exited:
			exit = o.exit
			return true, nil
		case unstarted:
			if o.image != image {
				return true, fmt.Errorf("the helper image %q could not be had: %s", o.image, o.reason)
			}
			return true, fmt.Errorf("%w: %s: %s", run.ErrImageNotFound, o.image, o.reason)
		case failed:
			return true, fmt.Errorf("listing %s in %s failed: %s", p, image, o.reason)
		}
		return false, nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			kind, name := "Pod", podName
			if name == "" {
				kind, name = "Job", job.Name
			}
			return nil, fmt.Errorf("listing %s in %s: %s", p, image, b.why(ctx, kind, name, "", "not started in time"))
		}
		return nil, err
	}
	if exit == exitPathNotFound {
		return nil, fmt.Errorf("%w: %s in image %s", run.ErrPathNotFound, p, image)
	}
	out, err := b.cs.CoreV1().Pods(b.o.Namespace).GetLogs(podName, &corev1.PodLogOptions{Container: suiteContainer}).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the folder list of %s: %w", image, err)
	}
	if exit != 0 {
		return nil, fmt.Errorf("listing %s in %s failed (exit %d): %s", p, image, exit, strings.TrimSpace(string(out)))
	}
	dirs := []string{}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			dirs = append(dirs, l)
		}
	}
	return dirs, nil
}
