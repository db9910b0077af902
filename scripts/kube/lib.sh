# Shared by the scripts of scripts/kube/ (sourced, not run): the cluster's settings, the state
# folder, and starting, waiting for and stopping its processes. See scripts/kube-cluster.sh.
# The odd settings, and why:
#   - kubelet failCgroupV1=false: this machine has cgroup v1 only (v1.34 refuses it otherwise);
#     cgroupDriver cgroupfs / SystemdCgroup=false: no systemd here.
#   - kubelet --node-ip=$NODE_IP (the eth0 address) and apiserver --advertise-address=$NODE_IP:
#     the kubelet refuses a loopback node IP and Endpoints refuse loopback addresses; the
#     apiserver still listens on 127.0.0.1 only, the kubelet on $NODE_IP (the apiserver dials it there).
#   - evictionHard 1% / imageGCHighThresholdPercent 100: the disk of this VM is shared with
#     everything else; the defaults would evict pods or garbage-collect the imported images,
#     which can never be pulled back.
#   - kubelet x509 authentication against our CA + AlwaysAllow authorization: only the apiserver
#     (system:masters client cert) talks to it; --kubelet-certificate-authority makes the apiserver
#     verify the kubelet's CA-signed serving cert (named after the node IP it holds).
#   - the sandbox ("pause") image is a tiny static Go program built here and imported into
#     containerd as $PAUSE_IMAGE, the name containerd's CRI config uses: no registry to pull it from.
#   - failSwapOn=false, protectKernelDefaults=false: a dev VM, not a hardened node;
#     resolvConf=$STATE/kube/resolv.conf: the host's non-loopback nameservers (a loopback stub
#     resolver would be the pod's own loopback).
#   - FORWARD accept rules for the pod bridge: Docker's FORWARD policy is DROP and br_netfilter
#     sends bridged pod-to-pod traffic through it.
#   - containerd restrict_oom_score_adj=true: this VM withholds CAP_SYS_RESOURCE even from root, so
#     runc cannot lower oom_score_adj (the sandbox asks for -998) and fails with "can't get final
#     child's PID from pipe: EOF"; restricted, containerd clamps scores at its own (0).
#   - --use-service-account-credentials=false, --leader-elect=false: one node, one copy of each.
#   - Debian's etcd is 3.4: the apiserver lacks RequestWatchProgress on it, so the clients log
#     "watchlist request ended with an error, falling back to LIST/WATCH" once per informer. Harmless.
#   - the binaries come from a plain `go build` (no ldflags), so /version says v0.0.0-master;
#     the compiled-in binary version (1.34) still drives API and feature behaviour.
set -euo pipefail

STATE=${VERDICT_TEST_STATE:-/tmp/verdict-test}
K=$STATE/kube
PKI=$K/pki
KUBE_VERSION=v1.34.2
KUBE_BIN_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/verdict-tools/kube-$KUBE_VERSION
ETCD_PORT=${VERDICT_TEST_ETCD_PORT:-52379}
ETCD_PEER_PORT=${VERDICT_TEST_ETCD_PEER_PORT:-52380}
API_PORT=${VERDICT_TEST_KUBE_API_PORT:-56443}
KCM_PORT=50257
SCHED_PORT=50259
KUBELET_PORT=50250
KUBELET_HEALTHZ_PORT=50248
NODE_NAME=verdict-node
SERVICE_CIDR=10.96.0.0/16
POD_CIDR=10.244.0.0/16
POD_BRIDGE=verdict-kube0
PAUSE_IMAGE=verdict.local/pause:3.10
CTR_SOCK=$K/containerd/containerd.sock
CTR=(ctr --address "$CTR_SOCK" -n k8s.io)
ADMIN_KUBECONFIG=$K/admin.kubeconfig
API=https://127.0.0.1:$API_PORT

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

LOG_PREFIX=${LOG_PREFIX:-kube-cluster}
# shellcheck source=scripts/lib.sh
. "$repo/scripts/lib.sh"

# start NAME CMD... starts CMD detached (it outlives this script), log in $K/NAME.log, pid in $K/NAME.pid.
start() {
	local name=$1
	shift
	log "$name: starting (log: $K/$name.log)"
	setsid nohup "$@" >"$K/$name.log" 2>&1 </dev/null &
	echo $! >"$K/$name.pid"
}

# wait_up NAME SECS CHECK...: waits for CHECK, failing with the log tail of NAME.
wait_up() {
	local name=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		if "$@" >/dev/null 2>&1; then
			log "$name: up"
			return 0
		fi
		if ! kill -0 "$(cat "$K/$name.pid" 2>/dev/null)" 2>/dev/null; then
			tail -n 30 "$K/$name.log" >&2 || true
			die "$name: exited right after starting (see $K/$name.log)"
		fi
		sleep 0.5
	done
	tail -n 30 "$K/$name.log" >&2 || true
	die "$name: not up within ${secs}s (see $K/$name.log)"
}

# curl_admin ARGS...: curl against the apiserver as the admin.
curl_admin() {
	curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@"
}

# stop_all stops what this script started: kubelet, its containers, containerd, the control plane.
stop_all() {
	local name
	if [[ -f $K/kubelet.pid ]]; then stop_one kubelet; fi
	if [[ -S $CTR_SOCK ]] && command -v ctr >/dev/null; then
		local t
		for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do
			"${CTR[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
		done
		sleep 1
		for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do
			"${CTR[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true
		done
	fi
	for name in containerd kube-scheduler kube-controller-manager kube-apiserver etcd; do
		stop_one "$name"
	done
	# Unmount what the kubelet left mounted (pod volumes), so the state dir can be removed.
	if [[ -d $K/kubelet ]]; then
		awk -v d="$K/kubelet" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
	fi
}

stop_one() {
	local name=$1 pid i
	pid=$(cat "$K/$name.pid" 2>/dev/null) || return 0
	# Only a process that still is what we started (pids get reused).
	if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$name"; then
		log "$name: stopping (pid $pid)"
		kill "$pid" 2>/dev/null || true
		for ((i = 0; i < 40; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.25
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$K/$name.pid"
}

mkdir -p "$K" "$PKI"

mkdir -p "$K" "$PKI"

# The host's own address: the node IP (the kubelet refuses loopback).
node_ip() {
	local ip
	ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')
	[[ -n $ip ]] || ip=$(hostname -I 2>/dev/null | awk '{print $1}')
	[[ -n $ip ]] || die "no non-loopback IPv4 address for the node"
	printf '%s\n' "$ip"
}
