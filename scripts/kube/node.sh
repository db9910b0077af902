#!/usr/bin/env bash
# Starts the node: its own containerd with CNI, the pause image, the kubelet; waits for it to be
# Ready and, after each kubelet start, runs a smoke pod. Exits non-zero with the reason in
# $K/node.err when the node cannot be had.
set -euo pipefail
# shellcheck source=scripts/kube/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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

NODE_IP=$(node_ip)
rm -f "$K/node.err"
ensure_node
