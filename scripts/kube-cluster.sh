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
# started; `kube-cluster.sh check` runs verdict-examples/pass end to end (import, Succeeded, log
# through the apiserver) and, with python3, an exec through the apiserver.
#
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
repo=$(cd "$here/.." && pwd)

LOG_PREFIX=kube-cluster
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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

# The host's own address: the node IP (the kubelet refuses loopback).
node_ip() {
	local ip
	ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')
	[[ -n $ip ]] || ip=$(hostname -I 2>/dev/null | awk '{print $1}')
	[[ -n $ip ]] || die "no non-loopback IPv4 address for the node"
	printf '%s\n' "$ip"
}

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

# --- 1. etcd ------------------------------------------------------------------------------------
etcd_up() { curl -fs "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }

ensure_etcd() {
	if etcd_up; then
		log "etcd: 127.0.0.1:$ETCD_PORT answers, reusing it"
		return
	fi
	command -v etcd >/dev/null || apt_install etcd-server
	command -v etcd >/dev/null || die "etcd: etcd missing after installing etcd-server"
	mkdir -p "$K/etcd"
	chmod 700 "$K/etcd"
	start etcd etcd --name verdict --data-dir "$K/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "verdict=http://127.0.0.1:$ETCD_PEER_PORT" \
		--quota-backend-bytes 2147483648 --snapshot-count 10000
	wait_up etcd 60 etcd_up
}

# --- 2. certificates ----------------------------------------------------------------------------
# cert NAME SUBJECT [SAN]: a key pair signed by the CA, kept once made.
cert() {
	local name=$1 subj=$2 san=${3:-} ext
	if [[ -s $PKI/$name.crt && -s $PKI/$name.key ]]; then
		return
	fi
	ext=$PKI/$name.ext
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		if [[ -n $san ]]; then
			echo "extendedKeyUsage=serverAuth,clientAuth"
			echo "subjectAltName=$san"
		else
			echo "extendedKeyUsage=clientAuth"
		fi
	} >"$ext"
	openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null ||
		die "certs: openssl req for $name failed"
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 3650 -sha256 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null || die "certs: signing $name failed"
	rm -f "$PKI/$name.csr" "$ext"
	chmod 600 "$PKI/$name.key"
}

# kubeconfig FILE CERTNAME: a kubeconfig for the apiserver with a client certificate.
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: verdict
  cluster:
    server: $API
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $PKI/$2.crt
    client-key: $PKI/$2.key
contexts:
- name: verdict
  context:
    cluster: verdict
    user: $2
    namespace: default
current-context: verdict
EOF
}

ensure_certs() {
	command -v openssl >/dev/null || apt_install openssl
	if [[ ! -s $PKI/ca.crt || ! -s $PKI/ca.key ]]; then
		log "certs: making a CA and certificates under $PKI"
		rm -f "$PKI"/*.crt "$PKI"/*.key
		openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 3650 \
			-subj "/CN=verdict-kube-ca" -addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null || die "certs: making the CA failed"
		chmod 600 "$PKI/ca.key"
	fi
	cert apiserver "/CN=kube-apiserver" \
		"IP:127.0.0.1,IP:10.96.0.1,IP:$NODE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert admin "/O=system:masters/CN=verdict-admin"
	# The apiserver's client certificate towards the kubelet (logs, exec).
	cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
	# The kubelet's client certificate: the Node authorizer knows it by this name and group.
	cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
	# The kubelet's serving certificate, named after the node IP it is valid for.
	cert "kubelet-serving-$NODE_IP" "/CN=$NODE_NAME" "IP:$NODE_IP,IP:127.0.0.1,DNS:$NODE_NAME,DNS:localhost"
	if [[ ! -s $PKI/sa.key ]]; then
		openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null || die "certs: service-account key failed"
		chmod 600 "$PKI/sa.key"
	fi
	[[ -s $PKI/sa.pub ]] || openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null ||
		die "certs: service-account public key failed"
	kubeconfig "$ADMIN_KUBECONFIG" admin
	kubeconfig "$K/kubelet.kubeconfig" kubelet
}

# --- 3. kube-apiserver --------------------------------------------------------------------------
apiserver_up() { curl_admin -o /dev/null "$API/readyz" 2>/dev/null; }

ensure_apiserver() {
	if apiserver_up; then
		log "kube-apiserver: $API answers, reusing it"
		return
	fi
	start kube-apiserver "$KUBE_BIN_DIR/kube-apiserver" \
		--bind-address=127.0.0.1 --secure-port="$API_PORT" --advertise-address="$NODE_IP" \
		--etcd-servers="http://127.0.0.1:$ETCD_PORT" \
		--client-ca-file="$PKI/ca.crt" \
		--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
		--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$PKI/ca.crt" \
		--kubelet-preferred-address-types=InternalIP,Hostname \
		--authorization-mode=Node,RBAC \
		--enable-admission-plugins=NodeRestriction \
		--allow-privileged=true \
		--service-cluster-ip-range="$SERVICE_CIDR" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$PKI/sa.pub" \
		--service-account-signing-key-file="$PKI/sa.key" \
		--cert-dir="$K/apiserver" \
		--profiling=false
	wait_up kube-apiserver 120 apiserver_up
}

# --- 4. kube-controller-manager and kube-scheduler ----------------------------------------------
kcm_up() { curl -fsk -o /dev/null "https://127.0.0.1:$KCM_PORT/healthz"; }
sched_up() { curl -fsk -o /dev/null "https://127.0.0.1:$SCHED_PORT/healthz"; }

ensure_controller_manager() {
	if kcm_up; then
		log "kube-controller-manager: 127.0.0.1:$KCM_PORT answers, reusing it"
		return
	fi
	start kube-controller-manager "$KUBE_BIN_DIR/kube-controller-manager" \
		--kubeconfig="$ADMIN_KUBECONFIG" \
		--authentication-kubeconfig="$ADMIN_KUBECONFIG" --authorization-kubeconfig="$ADMIN_KUBECONFIG" \
		--bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
		--controllers='*' --use-service-account-credentials=false --leader-elect=false \
		--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
		--cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
		--service-cluster-ip-range="$SERVICE_CIDR" --profiling=false
	wait_up kube-controller-manager 60 kcm_up
}

# Pods cannot be created before the controller-manager made the namespace's default ServiceAccount.
default_sa() { curl_admin -o /dev/null "$API/api/v1/namespaces/default/serviceaccounts/default" 2>/dev/null; }
wait_default_sa() {
	wait_for 60 default_sa || die "kube-controller-manager: no default ServiceAccount in namespace default after 60s (see $K/kube-controller-manager.log)"
}

ensure_scheduler() {
	if sched_up; then
		log "kube-scheduler: 127.0.0.1:$SCHED_PORT answers, reusing it"
		return
	fi
	start kube-scheduler "$KUBE_BIN_DIR/kube-scheduler" \
		--kubeconfig="$ADMIN_KUBECONFIG" \
		--authentication-kubeconfig="$ADMIN_KUBECONFIG" --authorization-kubeconfig="$ADMIN_KUBECONFIG" \
		--bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false --profiling=false
	wait_up kube-scheduler 60 sched_up
}

# --- 5. the node: containerd, CNI, pause image, kubelet -----------------------------------------
# Each step returns non-zero with the reason in $K/node.err instead of dying: the node is
# optional with VERDICT_TEST_KUBE_NODELESS=1 (ensure_node runs in a subshell, so a die in it,
# apt-get say, is survivable too).
node_fail() {
	printf '%s\n' "$*" >"$K/node.err"
	return 1
}

containerd_up() { [[ -S $CTR_SOCK ]] && ctr --address "$CTR_SOCK" version >/dev/null 2>&1; }

ensure_containerd() {
	if containerd_up; then
		log "containerd: $CTR_SOCK answers, reusing it"
		return
	fi
	if ! command -v containerd >/dev/null || ! command -v runc >/dev/null; then
		apt_install containerd runc
	fi
	command -v containerd >/dev/null && command -v runc >/dev/null || node_fail "containerd: containerd/runc missing" || return
	[[ -x /usr/lib/cni/bridge ]] || apt_install containernetworking-plugins
	[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] ||
		node_fail "containerd: CNI plugins missing in /usr/lib/cni (containernetworking-plugins)" || return
	local d=$K/containerd
	mkdir -p "$d/root" "$d/state" "$K/cni/net.d" "$K/cni/ipam"
	cat >"$d/config.toml" <<EOF
# Written by scripts/kube-cluster.sh: a containerd separate from Docker's, for the kubelet.
version = 2
root = "$d/root"
state = "$d/state"
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$PAUSE_IMAGE"
    enable_selinux = false
    restrict_oom_score_adj = true
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$K/cni/net.d"
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
  [plugins."io.containerd.internal.v1.opt"]
    path = "$d/opt"
EOF
	cat >"$K/cni/net.d/10-verdict.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "verdict-kube",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$POD_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$K/cni/ipam"
      }
    }
  ]
}
EOF
	if command -v iptables >/dev/null; then
		local dir
		for dir in -i -o; do
			iptables -C FORWARD "$dir" "$POD_BRIDGE" -j ACCEPT 2>/dev/null ||
				iptables -I FORWARD "$dir" "$POD_BRIDGE" -j ACCEPT 2>/dev/null || log "containerd: could not add a FORWARD rule for $POD_BRIDGE"
		done
	fi
	start containerd containerd --config "$d/config.toml"
	local i
	for ((i = 0; i < 60; i++)); do
		containerd_up && break
		kill -0 "$(cat "$K/containerd.pid")" 2>/dev/null || break
		sleep 0.5
	done
	if ! containerd_up; then
		tail -n 20 "$K/containerd.log" >&2 || true
		node_fail "containerd: not answering on $CTR_SOCK (see $K/containerd.log)"
		return
	fi
	log "containerd: up"
}

docker_up() { docker info >/dev/null 2>&1; }

ensure_pause_image() {
	if "${CTR[@]}" images check "name==$PAUSE_IMAGE" 2>/dev/null | grep -q complete; then
		return
	fi
	command -v docker >/dev/null && docker_up || node_fail "pause image: the Docker engine does not answer (run scripts/services.sh)" || return
	command -v go >/dev/null || node_fail "pause image: go is needed to build it" || return
	local d=$K/pause
	mkdir -p "$d"
	cat >"$d/go.mod" <<'EOF'
module verdict.local/pause

go 1.21
EOF
	cat >"$d/main.go" <<'EOF'
// pause holds a pod's namespaces until it is told to stop: the sandbox of every pod on the node.
// "pause exit" exits at once (the script's smoke test pod runs it so).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "exit" {
		return
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
EOF
	printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$d/Dockerfile"
	log "pause image: building $PAUSE_IMAGE"
	(cd "$d" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' -o pause .) >&2 ||
		node_fail "pause image: go build failed" || return
	DOCKER_BUILDKIT=0 docker build --quiet -t "$PAUSE_IMAGE" "$d" >/dev/null 2>"$d/build.log" || {
		cat "$d/build.log" >&2
		node_fail "pause image: docker build failed"
		return
	}
	docker save "$PAUSE_IMAGE" | "${CTR[@]}" images import - >&2 ||
		node_fail "pause image: ctr images import failed" || return
	"${CTR[@]}" images check "name==$PAUSE_IMAGE" 2>/dev/null | grep -q complete ||
		node_fail "pause image: $PAUSE_IMAGE not in containerd's k8s.io namespace after the import" || return
	log "pause image: imported as $PAUSE_IMAGE"
}

kubelet_up() { curl -fs "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" | grep -q ok; }

node_ready() {
	curl_admin "$API/api/v1/nodes/$NODE_NAME" 2>/dev/null | tr -d ' \n' |
		grep -q '"type":"Ready","status":"True"'
}

KUBELET_STARTED=
ensure_kubelet() {
	if kubelet_up; then
		log "kubelet: 127.0.0.1:$KUBELET_HEALTHZ_PORT answers, reusing it"
		return
	fi
	mkdir -p "$K/kubelet"
	grep '^nameserver' /etc/resolv.conf | grep -v ' 127\.' >"$K/resolv.conf" || echo 'nameserver 8.8.8.8' >"$K/resolv.conf"
	cat >"$K/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving-$NODE_IP.crt
tlsPrivateKeyFile: $PKI/kubelet-serving-$NODE_IP.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$CTR_SOCK
resolvConf: $K/resolv.conf
protectKernelDefaults: false
evictionHard:
  imagefs.available: "1%"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  memory.available: "100Mi"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
clusterDomain: cluster.local
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
EOF
	start kubelet "$KUBE_BIN_DIR/kubelet" --config="$K/kubelet-config.yaml" \
		--kubeconfig="$K/kubelet.kubeconfig" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
		--root-dir="$K/kubelet" --cert-dir="$K/kubelet/pki" --v=1
	KUBELET_STARTED=1
	local i
	for ((i = 0; i < 120; i++)); do
		kubelet_up && break
		kill -0 "$(cat "$K/kubelet.pid")" 2>/dev/null || break
		sleep 0.5
	done
	if ! kubelet_up; then
		tail -n 30 "$K/kubelet.log" >&2 || true
		node_fail "kubelet: healthz on 127.0.0.1:$KUBELET_HEALTHZ_PORT does not answer (see $K/kubelet.log)"
		return
	fi
	log "kubelet: up"
}

# pod_phase NAME prints the pod's phase in the default namespace.
pod_phase() {
	curl_admin "$API/api/v1/namespaces/default/pods/$1" 2>/dev/null | tr -d ' \n' |
		grep -o '"phase":"[A-Za-z]*"' | tail -n 1 | cut -d'"' -f4
}

pod_done() { [[ $(pod_phase "$1") == @(Succeeded|Failed) ]]; }

# run_pod NAME IMAGE ARGS_JSON SECS: runs a pod as the tests do (no capabilities, no privilege
# escalation, RuntimeDefault seccomp) and waits for it to finish; fails unless it Succeeded.
run_pod() {
	local name=$1 image=$2 args=$3 secs=$4
	curl_admin -o /dev/null -X DELETE "$API/api/v1/namespaces/default/pods/$name?gracePeriodSeconds=0" 2>/dev/null || true
	wait_for 30 sh -c "! curl -fsS --cacert '$PKI/ca.crt' --cert '$PKI/admin.crt' --key '$PKI/admin.key' -o /dev/null '$API/api/v1/namespaces/default/pods/$name'" || return 1
	curl_admin -o /dev/null -H 'Content-Type: application/json' -X POST "$API/api/v1/namespaces/default/pods" -d @- <<EOF || return 1
{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "$name"},
  "spec": {
    "nodeName": "",
    "restartPolicy": "Never",
    "automountServiceAccountToken": false,
    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{
      "name": "main", "image": "$image", "imagePullPolicy": "IfNotPresent", "args": $args,
      "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
    }]
  }
}
EOF
	wait_for "$secs" pod_done "$name"
	local phase
	phase=$(pod_phase "$name")
	[[ $phase == Succeeded ]] && return
	log "pod $name: phase ${phase:-unknown}; container status: $(curl_admin "$API/api/v1/namespaces/default/pods/$name" 2>/dev/null |
		tr -d ' \n' | grep -o '"containerStatuses":.*' | head -c 400)"
	log "pod $name: log: $(curl_admin "$API/api/v1/namespaces/default/pods/$name/log" 2>/dev/null | tail -n 5)"
	return 1
}

ensure_node() {
	ensure_containerd || return
	ensure_pause_image || return
	ensure_kubelet || return
	if ! wait_for 90 node_ready; then
		tail -n 20 "$K/kubelet.log" >&2 || true
		node_fail "kubelet: node $NODE_NAME did not become Ready within 90s (see $K/kubelet.log)"
		return
	fi
	log "node: $NODE_NAME is Ready"
	# Smoke test after (re)starting the kubelet: a pod must run, not just the node be Ready.
	if [[ -n $KUBELET_STARTED || ! -f $K/smoke-ok ]]; then
		rm -f "$K/smoke-ok"
		if ! run_pod verdict-smoke "$PAUSE_IMAGE" '["exit"]' 120; then
			node_fail "node: the smoke test pod verdict-smoke did not succeed (see $K/kubelet.log, $K/containerd.log)"
			return
		fi
		curl_admin -o /dev/null -X DELETE "$API/api/v1/namespaces/default/pods/verdict-smoke?gracePeriodSeconds=0" || true
		touch "$K/smoke-ok"
		log "node: a pod ran to Succeeded"
	fi
}

# check: a suite image end to end (import, pod Succeeded, log through the apiserver).
check() {
	local img=verdict-examples/pass:latest
	docker image inspect "$img" >/dev/null 2>&1 || VERDICT_EXAMPLES_PYTEST=0 "$repo/examples/suites/build.sh" >&2 ||
		die "check: examples/suites/build.sh failed"
	docker save "$img" | "${CTR[@]}" images import - >&2 || die "check: import of $img failed"
	run_pod verdict-check "docker.io/$img" '["all"]' 120 || die "check: pod verdict-check did not succeed"
	log "check: pod verdict-check Succeeded; its log:"
	curl_admin "$API/api/v1/namespaces/default/pods/verdict-check/log" >&2 || die "check: reading the log failed"
	curl_admin -o /dev/null -X DELETE "$API/api/v1/namespaces/default/pods/verdict-check" || true
	if command -v python3 >/dev/null; then
		check_exec
	else
		log "check: no python3, exec through the apiserver not checked"
	fi
	log "check: ok"
}

# check_exec: an exec through the apiserver (websocket, as client-go does) into a running pod.
pod_running() { [[ $(pod_phase "$1") == Running ]]; }
check_exec() {
	curl_admin -o /dev/null -X DELETE "$API/api/v1/namespaces/default/pods/verdict-exec?gracePeriodSeconds=0" 2>/dev/null || true
	wait_for 30 sh -c "! curl -fsS --cacert '$PKI/ca.crt' --cert '$PKI/admin.crt' --key '$PKI/admin.key' -o /dev/null '$API/api/v1/namespaces/default/pods/verdict-exec'"
	curl_admin -o /dev/null -H 'Content-Type: application/json' -X POST "$API/api/v1/namespaces/default/pods" -d @- <<EOF || die "check: creating pod verdict-exec failed"
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "verdict-exec"},
 "spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
  "containers": [{"name": "main", "image": "$PAUSE_IMAGE", "imagePullPolicy": "IfNotPresent",
   "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}
EOF
	wait_for 60 pod_running verdict-exec || die "check: pod verdict-exec is not Running"
	cat >"$K/wsexec.py" <<'EOF'
# wsexec.py API CA CERT KEY NS POD CMD...: runs an exec through the apiserver (websocket, v4.channel.k8s.io)
# and prints the stdout/stderr/status channels.
import base64, os, socket, ssl, struct, sys, urllib.parse
api, ca, cert, key, ns, pod = sys.argv[1:7]
cmd = sys.argv[7:]
u = urllib.parse.urlparse(api)
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(cert, key)
s = ctx.wrap_socket(socket.create_connection((u.hostname, u.port)), server_hostname=u.hostname)
q = "&".join(["command=" + urllib.parse.quote(c) for c in cmd] + ["stdout=true", "stderr=true"])
k = base64.b64encode(os.urandom(16)).decode()
s.sendall((f"GET /api/v1/namespaces/{ns}/pods/{pod}/exec?{q} HTTP/1.1\r\nHost: {u.netloc}\r\n"
           f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {k}\r\n"
           "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n").encode())
buf = b""
while b"\r\n\r\n" not in buf:
    d = s.recv(4096)
    if not d: break
    buf += d
head, _, buf = buf.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode(), file=sys.stderr)
if b" 101 " not in head.split(b"\r\n")[0]:
    print(buf.decode(errors="replace"), file=sys.stderr); sys.exit(1)
def need(n):
    global buf
    while len(buf) < n:
        d = s.recv(65536)
        if not d: raise EOFError
        buf += d
    r, buf = buf[:n], buf[n:]
    return r
status = b""
try:
    while True:
        b0, b1 = need(2)
        op, n = b0 & 0xF, b1 & 0x7F
        if n == 126: n = struct.unpack(">H", need(2))[0]
        elif n == 127: n = struct.unpack(">Q", need(8))[0]
        p = need(n)
        if op == 8: break
        if op in (1, 2) and p:
            ch, data = p[0], p[1:]
            if ch == 1: sys.stdout.write(data.decode(errors="replace"))
            elif ch == 2: sys.stderr.write(data.decode(errors="replace"))
            elif ch == 3: status += data
except EOFError:
    pass
print("exec status:", status.decode(), file=sys.stderr)
sys.exit(0 if b'"Success"' in status else 1)
EOF
	python3 "$K/wsexec.py" "$API" "$PKI/ca.crt" "$PKI/admin.crt" "$PKI/admin.key" default verdict-exec /pause exit ||
		die "check: exec through the apiserver failed"
	curl_admin -o /dev/null -X DELETE "$API/api/v1/namespaces/default/pods/verdict-exec" || true
	log "check: exec through the apiserver works"
}

case ${1:-up} in
stop)
	stop_all
	exit 0
	;;
up | check) ;;
*) die "usage: $0 [up|stop|check]" ;;
esac

NODE_IP=$(node_ip)
command -v curl >/dev/null || apt_install curl
ensure_kube_bins
ensure_etcd
ensure_certs
ensure_apiserver
ensure_controller_manager
ensure_scheduler
wait_default_sa

NODE_OK=
rm -f "$K/node.err"
if (ensure_node); then
	NODE_OK=1
else
	NODE_ERR=$(cat "$K/node.err" 2>/dev/null || echo "node: failed (see the error above)")
	if [[ ${VERDICT_TEST_KUBE_NODELESS:-} == 1 ]]; then
		log "no node (VERDICT_TEST_KUBE_NODELESS=1, control plane only): $NODE_ERR"
	else
		die "$NODE_ERR (set VERDICT_TEST_KUBE_NODELESS=1 to accept a cluster without a node)"
	fi
fi

if [[ ${1:-up} == check ]]; then
	[[ -n $NODE_OK ]] || die "check: no node"
	check
fi

printf 'export VERDICT_TEST_KUBECONFIG=%q\n' "$ADMIN_KUBECONFIG"
if containerd_up; then
	printf 'export VERDICT_TEST_KUBE_CTR=%q\n' "${CTR[*]}"
fi
if [[ -n $NODE_OK ]]; then
	printf 'export VERDICT_TEST_KUBE_NODE=%q\n' "$NODE_NAME"
fi
