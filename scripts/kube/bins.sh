#!/usr/bin/env bash
# Builds the four Kubernetes binaries (v1.34.2) from tools/kube once, into the cache folder
# ~/.cache/verdict-tools/kube-<version>; reused when present.
set -euo pipefail
# shellcheck source=scripts/kube/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


# --- 0. Kubernetes binaries ---------------------------------------------------------------------
KUBE_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
ensure_kube_bins() {
	local b missing=
	for b in "${KUBE_BINS[@]}"; do
		[[ -x $KUBE_BIN_DIR/$b ]] || missing=1
	done
	if [[ -z $missing ]]; then
		return
	fi
	command -v go >/dev/null || die "binaries: go is needed to build the Kubernetes binaries"
	[[ -f $repo/tools/kube/go.mod ]] || die "binaries: $repo/tools/kube/go.mod missing"
	mkdir -p "$KUBE_BIN_DIR"
	log "binaries: building Kubernetes $KUBE_VERSION into $KUBE_BIN_DIR (the first build takes many minutes)"
	(cd "$repo/tools/kube" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "$KUBE_BIN_DIR/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet) >&2 ||
		die "binaries: go build in tools/kube failed"
	for b in "${KUBE_BINS[@]}"; do
		[[ -x $KUBE_BIN_DIR/$b ]] || die "binaries: $KUBE_BIN_DIR/$b missing after go build"
	done
}

ensure_kube_bins
