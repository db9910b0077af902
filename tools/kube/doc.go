// Package kube pins the Kubernetes release whose kube-apiserver,
// kube-controller-manager, kube-scheduler and kubelet the tests run as a
// single-node cluster. scripts/kube-cluster.sh builds them from here.
package kube
