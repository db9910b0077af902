package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"verdict/internal/run"
)

// Container names in a run's pod.
const (
	suiteContainer  = "suite"   // the run's image: the suite itself
	keeperContainer = "reports" // the helper image: holds the report folders until they are copied
)

// Labels and annotations of Verdict's own on its objects.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "verdict"
	// Pods of a Job carry the Job's name in this label (Kubernetes 1.27 and later).
	labelJobName = "batch.kubernetes.io/job-name"
	// A label value Kubernetes would refuse (a runner ID holds ':' and '/') is stored hashed;
	// the annotation of the same key keeps it as it was, for List.
	annotationPrefix = "verdict.dev/label."
)

// collectMargin is what the Job's deadline leaves past the run's timeout: the runner stops a
// run at its timeout itself, then copies the reports out of the still running keeper.
const collectMargin = 10 * 60 // seconds

// ttlAfterFinished removes a finished Job (and its pod and Secret) that no runner removed.
const ttlAfterFinished = 10 * 60 // seconds

// labelValue is v as a label value: itself when Kubernetes accepts it, else a digest of it.
func labelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "h-" + hex.EncodeToString(sum[:20])
}

// objectLabels are the labels of a run's Job, pod and Secret, with values Kubernetes accepts,
// and the annotations that keep the values as given.
func objectLabels(given map[string]string) (labels, annotations map[string]string) {
	labels = map[string]string{labelManagedBy: managedBy}
	annotations = map[string]string{}
	for k, v := range given {
		labels[k] = labelValue(v)
		annotations[annotationPrefix+k] = v
	}
	return labels, annotations
}

// givenLabels undoes objectLabels: the labels as Spec gave them.
func givenLabels(annotations map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range annotations {
		if name, ok := strings.CutPrefix(k, annotationPrefix); ok {
			out[name] = v
		}
	}
	return out
}

// volumeName names the emptyDir volume of the i-th report folder.
func volumeName(i int) string { return fmt.Sprintf("report-%d", i) }

// reportMounts mounts one emptyDir per report folder at /app/<folder>, in the suite and in the
// keeper alike: the keeper outlives the suite's exit, so the reports can be copied out of it.
func reportMounts(dirs []string, readOnly bool) []corev1.VolumeMount {
	var ms []corev1.VolumeMount
	for i, d := range dirs {
		ms = append(ms, corev1.VolumeMount{Name: volumeName(i), MountPath: path.Join("/app", d), ReadOnly: readOnly})
	}
	return ms
}

// restricted is the security context of both containers: no privilege, no escalation, no
// capability, the runtime's default seccomp profile.
func restricted() *corev1.SecurityContext {
	f := false
	return &corev1.SecurityContext{
		Privileged:               &f,
		AllowPrivilegeEscalation: &f,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// limits turns a run's resources into the suite container's: the limits as given; the memory
// request equal to its limit (memory cannot be taken back from a running suite) and the CPU
// request a quarter of its limit (a suite waiting on a browser seldom uses all it may); with a
// disk bound, an ephemeral-storage limit.
func limits(r run.Resources, diskBytes int64) corev1.ResourceRequirements {
	req := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	if r.MemoryBytes > 0 {
		q := *resource.NewQuantity(r.MemoryBytes, resource.BinarySI)
		req.Limits[corev1.ResourceMemory], req.Requests[corev1.ResourceMemory] = q, q
	}
	if r.NanoCPUs > 0 {
		req.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.NanoCPUs/1e6, resource.DecimalSI)
		req.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(r.NanoCPUs/4e6, 1), resource.DecimalSI)
	}
	if diskBytes > 0 {
		// A bound, not a reservation (as on Docker): without a request of its own, the request
		// would be the limit, and a node would fit only as many runs as it has limits of disk.
		req.Limits[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(diskBytes, resource.BinarySI)
		req.Requests[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(0, resource.BinarySI)
	}
	return req
}

// keeperResources bound the report keeper: it sleeps, then streams a tar.
var keeperResources = corev1.ResourceRequirements{
	Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"),
		corev1.ResourceMemory: resource.MustParse("32Mi")},
}

// secretFor holds the run's variables: they reach the suite from a Secret, never from the
// Job's own spec, which anyone allowed to read Jobs could read.
func secretFor(spec run.Spec, ns string) *corev1.Secret {
	labels, annotations := objectLabels(spec.Labels)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: ns, Labels: labels, Annotations: annotations},
		Type:       corev1.SecretTypeOpaque,
		StringData: spec.Env,
	}
	// The run's files (a shard's lists of tests) ride in the same Secret, under keys that are
	// no variable's name, and are mounted as files (filesVolume).
	for i, name := range slices.Sorted(maps.Keys(spec.Files)) {
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[fileKey(i)] = spec.Files[name]
	}
	return sec
}

// filesDir is where a run's files are mounted: every path of run.Spec.Files is in it.
const filesDir = "/verdict"

func fileKey(i int) string { return fmt.Sprintf("verdict-file-%d", i) }

// filesVolume mounts the run's files from its Secret at filesDir; nil when it has none.
func filesVolume(spec run.Spec) (*corev1.Volume, *corev1.VolumeMount) {
	if len(spec.Files) == 0 {
		return nil, nil
	}
	mode := int32(0o444)
	var items []corev1.KeyToPath
	for i, name := range slices.Sorted(maps.Keys(spec.Files)) {
		items = append(items, corev1.KeyToPath{Key: fileKey(i), Path: strings.TrimPrefix(name, filesDir+"/")})
	}
	v := &corev1.Volume{Name: "verdict-files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: spec.Name, Items: items, DefaultMode: &mode}}}
	return v, &corev1.VolumeMount{Name: v.Name, MountPath: filesDir, ReadOnly: true}
}

// jobFor is the run's Job: one pod, never retried, bounded by the run's timeout, with the suite
// and the report keeper side by side.
func jobFor(spec run.Spec, o Options, res run.Resources) *batchv1.Job {
	labels, annotations := objectLabels(spec.Labels)
	var zero int32
	deadline := int64(spec.Timeout.Seconds()) + collectMargin
	ttl := int32(ttlAfterFinished)
	var volumes []corev1.Volume
	for i := range spec.ReportDirs {
		volumes = append(volumes, corev1.Volume{Name: volumeName(i),
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	suite := corev1.Container{
		Name:            suiteContainer,
		Image:           spec.Image,
		ImagePullPolicy: o.PullPolicy,
		Command:         spec.Entrypoint, // nil keeps the image's entrypoint
		Args:            spec.Args,
		EnvFrom:         []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: spec.Name}}}},
		Resources:       limits(res, o.DiskLimitBytes),
		SecurityContext: restricted(),
		VolumeMounts:    reportMounts(spec.ReportDirs, false),
	}
	if v, m := filesVolume(spec); v != nil {
		volumes = append(volumes, *v)
		suite.VolumeMounts = append(suite.VolumeMounts, *m)
	}
	keeper := corev1.Container{
		Name:            keeperContainer,
		Image:           o.HelperImage,
		ImagePullPolicy: o.PullPolicy,
		Command:         []string{o.HelperCommand, "reports-keeper", "hold"},
		Resources:       keeperResources,
		SecurityContext: restricted(),
		VolumeMounts:    reportMounts(spec.ReportDirs, true),
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: o.Namespace, Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &zero,
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       podSpec(5, nil, []corev1.Container{suite, keeper}, volumes),
			},
		},
	}
}

// podSpec is the pod of every Job Verdict makes: run once, no service account token, no
// service links, the runtime's default seccomp profile, grace seconds to stop.
func podSpec(grace int64, inits, containers []corev1.Container, volumes []corev1.Volume) corev1.PodSpec {
	no := false
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  &no,
		EnableServiceLinks:            &no,
		TerminationGracePeriodSeconds: &grace,
		SecurityContext: &corev1.PodSecurityContext{
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: inits,
		Containers:     containers,
		Volumes:        volumes,
	}
}

// listJob lists the folders under p in image: an init container copies the verdict binary
// from the helper image into a volume, and the image's container runs it from there. A Job, so
// that one left by a process that died midway goes by its TTL.
func listJob(o Options, image, p string, policy corev1.PullPolicy) *batchv1.Job {
	var zero int32
	ttl := int32(60)
	const bin = "/verdict-bin"
	mount := []corev1.VolumeMount{{Name: "bin", MountPath: bin}}
	labels := map[string]string{labelManagedBy: managedBy, "verdict.dev/purpose": "list-folders"}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "verdict-ls-", Namespace: o.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &zero,
			ActiveDeadlineSeconds:   ptr(int64(300)),
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: podSpec(0, []corev1.Container{{Name: "install", Image: o.HelperImage, ImagePullPolicy: o.PullPolicy,
					Command: []string{o.HelperCommand, "reports-keeper", "install", bin + "/verdict"}, Resources: keeperResources,
					SecurityContext: restricted(), VolumeMounts: mount}},
					[]corev1.Container{{Name: suiteContainer, Image: image, ImagePullPolicy: policy,
						Command: []string{bin + "/verdict", "reports-keeper", "ls", p}, Resources: keeperResources,
						SecurityContext: restricted(), VolumeMounts: mount}},
					[]corev1.Volume{{Name: "bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}),
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }
