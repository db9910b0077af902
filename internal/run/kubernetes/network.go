package kubernetes

import (
	"context"
	"fmt"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// policyName names the NetworkPolicy that isolates the runs of a namespace.
const policyName = "verdict-runs"

// runsPolicy keeps runs apart as the Docker backend's run network does: no pod reaches a run's
// pod (runs cannot reach each other), and a run reaches anything but the blocked destinations.
// The cluster's network plugin must enforce NetworkPolicies for it to act.
func runsPolicy(ns string, blocked []netip.Prefix) *networkingv1.NetworkPolicy {
	var v4, v6 []string
	for _, p := range blocked {
		if p.Addr().Is4() {
			v4 = append(v4, p.Masked().String())
		} else {
			v6 = append(v6, p.Masked().String())
		}
	}
	egress := []networkingv1.NetworkPolicyEgressRule{{}} // anywhere
	if len(blocked) > 0 {
		egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: v4}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: v6}},
		}}}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName, Namespace: ns, Labels: map[string]string{labelManagedBy: managedBy}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelManagedBy: managedBy}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{}, // none: nothing reaches a run
			Egress:      egress,
		},
	}
}

// EnsureNetwork installs (or brings up to date) the NetworkPolicy that keeps the namespace's
// runs apart and away from the blocked destinations. Runners call it before their first run.
func (b *Backend) EnsureNetwork(ctx context.Context) error {
	want := runsPolicy(b.o.Namespace, b.o.BlockedNets)
	policies := b.cs.NetworkingV1().NetworkPolicies(b.o.Namespace)
	have, err := policies.Get(ctx, policyName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = policies.Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		have.Spec, have.Labels = want.Spec, want.Labels
		_, err = policies.Update(ctx, have, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("the runs' NetworkPolicy %s/%s: %w", b.o.Namespace, policyName, err)
	}
	return nil
}
