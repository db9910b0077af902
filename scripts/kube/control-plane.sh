#!/usr/bin/env bash
# Starts the control plane (etcd, the certificates, kube-apiserver, kube-controller-manager,
# kube-scheduler), reusing components that answer, and waits for the default ServiceAccount.
set -euo pipefail
# shellcheck source=scripts/kube/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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

NODE_IP=$(node_ip)
command -v curl >/dev/null || apt_install curl
ensure_etcd
ensure_certs
ensure_apiserver
ensure_controller_manager
ensure_scheduler
wait_default_sa
