#!/usr/bin/env bash
# Stops everything the cluster scripts started: kubelet, its containers, containerd, the
# control plane.
set -euo pipefail
# shellcheck source=scripts/kube/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"



stop_all
