package kubernetes

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// phase is what a run's pod status says of the suite container.
type phase int

const (
	waiting   phase = iota // not started yet, maybe never: see reason
	running                // started (its log can be followed)
	exited                 // the suite container ended: exit holds its code
	failed                 // it will never start, or the pod ended without it: reason says why
	unstarted              // it will never start: an image that cannot be pulled
)

// observation is a run's pod as Wait and Logs read it.
type observation struct {
	phase    phase
	exit     int
	reason   string // why it waits, or why it failed, in Kubernetes' words
	image    string // unstarted: the image that cannot be had
	overDisk bool   // failed: evicted for passing an ephemeral-storage limit
}

// imageFailures are the waiting reasons after which the kubelet will not start the container
// without someone fixing the image: the run ends at once, as the Docker backend's failed pull
// does.
var imageFailures = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
}

// observe reads a pod's status as a kubelet reports it. An image that cannot be had ends it
// whichever container needs it: the suite, the report keeper or an init container.
func observe(pod *corev1.Pod) observation {
	if pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == evictedReason {
		// The kubelet killed the containers: the suite's exit code is its doing, not the suite's.
		return observation{phase: failed, reason: joinReason(pod.Status.Reason, strings.TrimSpace(pod.Status.Message)),
			overDisk: overDisk(pod.Status.Message)}
	}
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && imageFailures[w.Reason] && cs.Name != suiteContainer {
			return observation{phase: unstarted, image: cs.Image, reason: joinReason(w.Reason, w.Message)}
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != suiteContainer {
			continue
		}
		switch {
		case cs.State.Terminated != nil:
			return observation{phase: exited, exit: int(cs.State.Terminated.ExitCode), reason: cs.State.Terminated.Reason}
		case cs.State.Running != nil:
			return observation{phase: running}
		case cs.State.Waiting != nil && imageFailures[cs.State.Waiting.Reason]:
			return observation{phase: unstarted, image: cs.Image, reason: joinReason(cs.State.Waiting.Reason, cs.State.Waiting.Message)}
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			if pod.Status.Phase == corev1.PodFailed {
				break
			}
			return observation{phase: waiting, reason: joinReason(cs.State.Waiting.Reason, cs.State.Waiting.Message)}
		}
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		// Ended without the suite container's status: deadline, eviction, a node lost.
		return observation{phase: failed, reason: joinReason(pod.Status.Reason, pod.Status.Message)}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return observation{phase: waiting, reason: joinReason(c.Reason, c.Message)}
		}
	}
	return observation{phase: waiting, reason: "the pod is pending"}
}

// evictedReason is a pod's status reason once the kubelet evicted it.
const evictedReason = "Evicted"

// overDisk tells whether an eviction message is the kubelet's for a pod or container past its
// ephemeral-storage limit, or an emptyDir past its size ("Pod ephemeral local storage usage
// exceeds the total limit of containers 10Mi.", "Container suite exceeded its local ephemeral
// storage limit \"10Mi\".", "Usage of EmptyDir volume \"report-0\" exceeds the limit \"10Mi\".").
func overDisk(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "ephemeral") && (strings.Contains(m, "limit") || strings.Contains(m, "exceeds")) ||
		strings.Contains(m, "emptydir volume")
}

func joinReason(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return fmt.Sprintf("%s: %s", reason, message)
}
