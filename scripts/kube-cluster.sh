#!/usr/bin/env bash
# Brings up a real single-node Kubernetes cluster (v1.34.2) on this Debian machine for the tests,
# with no container registry in reach:
#   etcd (Debian's etcd-server)        http://127.0.0.1:52379, data under $STATE/kube/etcd
#   kube-apiserver                     https://127.0.0.1:56443, Node,RBAC, x509 client certs
#   kube-controller-manager            127.0.0.1:50257 (all controllers: Job, GC, TTL-after-finished...)
#   kube-scheduler                     127.0.0.1:50259
#   containerd (its own instance, not docker's): socket $STATE/kube/containerd/containerd.sock,
#     CRI on, cgroupfs, CNI bridge+host-local from Debian's containernetworking-plugins
#   kubelet, node "verdict-node"       $NODE_IP:50250, healthz 127.0.0.1:50248
# The four Kubernetes binaries are built from tools/kube (cached under ~/.cache/verdict-tools).
# Certificates (openssl, one CA) and everything else live under ${VERDICT_TEST_STATE:-/tmp/verdict-test}/kube.
# No kube-proxy and no cluster DNS: Services do not route from pods; the tests only need pods.
#
# Progress goes to stderr; stdout carries only `export NAME=value` lines:
#   vars=$(scripts/kube-cluster.sh) && eval "$vars"
# exports VERDICT_TEST_KUBECONFIG (admin, O=system:masters), VERDICT_TEST_KUBE_CTR (the command
# prefix that imports images into the node: `docker save IMG | $VERDICT_TEST_KUBE_CTR images import -`)
# and, once the node is Ready and ran a smoke pod (after each kubelet start), VERDICT_TEST_KUBE_NODE.
# Without a working node it fails, unless VERDICT_TEST_KUBE_NODELESS=1 (control plane only).
# Idempotent: components that answer are reused. `kube-cluster.sh stop` stops everything it
# started. The Kubernetes backend's own tests (internal/run/kubernetes) are the cluster's check:
# they import suite images, run them as Jobs, and read logs and reports through the apiserver.
#
# One job per script, under scripts/kube/ (lib.sh holds the settings and the odd choices, with why):
#   bins.sh           builds the four Kubernetes binaries once into the cache folder
#   control-plane.sh  etcd, certificates, kube-apiserver, kube-controller-manager, kube-scheduler
#   node.sh           containerd with CNI, the pause image, the kubelet, a smoke pod
#   stop.sh           stops all of it
set -euo pipefail
kube=$(cd "$(dirname "${BASH_SOURCE[0]}")/kube" && pwd)
# shellcheck source=scripts/kube/lib.sh
. "$kube/lib.sh"

case ${1:-up} in
stop) exec "$kube/stop.sh" ;;
up) ;;
*) die "usage: $0 [up|stop]" ;;
esac

"$kube/bins.sh"
"$kube/control-plane.sh"

NODE_OK=
if "$kube/node.sh"; then
	NODE_OK=1
else
	NODE_ERR=$(cat "$K/node.err" 2>/dev/null || echo "node: failed (see the error above)")
	if [[ ${VERDICT_TEST_KUBE_NODELESS:-} == 1 ]]; then
		log "no node (VERDICT_TEST_KUBE_NODELESS=1, control plane only): $NODE_ERR"
	else
		die "$NODE_ERR (set VERDICT_TEST_KUBE_NODELESS=1 to accept a cluster without a node)"
	fi
fi

printf 'export VERDICT_TEST_KUBECONFIG=%q\n' "$ADMIN_KUBECONFIG"
if [[ -S $CTR_SOCK ]] && ctr --address "$CTR_SOCK" version >/dev/null 2>&1; then
	printf 'export VERDICT_TEST_KUBE_CTR=%q\n' "${CTR[*]}"
fi
if [[ -n $NODE_OK ]]; then
	printf 'export VERDICT_TEST_KUBE_NODE=%q\n' "$NODE_NAME"
fi
