// Package kubeenv finds the Kubernetes test cluster, like testenv finds the other services. It
// is a package of its own because client-go is large: only the tests that use the cluster link
// it, which keeps every other test binary (and the short tier's build) small.
package kubeenv

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"verdict/internal/domain"
	"verdict/internal/testenv"
)

// HelperImage is the verdict image the Kubernetes tests' runs use as their report keeper:
// scripts/image.sh builds it, scripts/kube-cluster.sh loads it into the node.
const HelperImage = "verdict:local"

// Kube is a namespace of its own for one test in the single-node cluster scripts/kube-cluster.sh
// starts (a real kube-apiserver, controller manager, scheduler and kubelet on containerd).
type Kube struct {
	Kubeconfig string
	Namespace  string
	Client     kubernetes.Interface
}

// Cluster creates the test's namespace, deleted with what is left in it when the test ends.
// The test fails when the cluster is not configured (VERDICT_TEST_KUBECONFIG) or has no ready
// node (VERDICT_TEST_KUBE_NODE).
func Cluster(t testing.TB) *Kube {
	t.Helper()
	testenv.SkipShort(t, "the Kubernetes test cluster")
	path := os.Getenv("VERDICT_TEST_KUBECONFIG")
	if path == "" {
		t.Fatal("VERDICT_TEST_KUBECONFIG is not set: the Kubernetes tests need the cluster scripts/kube-cluster.sh starts " +
			`(run the tests with scripts/test.sh, or eval "$(scripts/kube-cluster.sh)" first)`)
	}
	node := os.Getenv("VERDICT_TEST_KUBE_NODE")
	if node == "" {
		t.Fatal("VERDICT_TEST_KUBE_NODE is not set: the cluster has no ready node to run pods on (see scripts/kube-cluster.sh's output)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", path, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the test cluster does not answer or has no node %s: %v (run scripts/kube-cluster.sh)", node, err)
	}
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	if !ready {
		t.Fatalf("node %s is not ready (run scripts/kube-cluster.sh)", node)
	}
	k := &Kube{Kubeconfig: path, Namespace: "verdict-test-" + domain.RandomHex(6), Client: cs}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.Namespace}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var now int64
		_ = cs.CoreV1().Namespaces().Delete(ctx, k.Namespace, metav1.DeleteOptions{GracePeriodSeconds: &now})
	})
	// Pods are refused until the controller manager has made the namespace's default account.
	for {
		if _, err := cs.CoreV1().ServiceAccounts(k.Namespace).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("namespace %s got no default service account (is kube-controller-manager running?): %v", k.Namespace, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return k
}
