# shellcheck shell=bash
# Shell helpers the scripts share (services, the Kubernetes cluster, chaos, the vendoring scripts).
# Source it after setting LOG_PREFIX; progress and errors go to stderr.

log() { printf '%s: %s\n' "$LOG_PREFIX" "$*" >&2; }
die() {
	printf '%s: ERROR: %s\n' "$LOG_PREFIX" "$*" >&2
	exit 1
}

# apt_install PKG... installs Debian packages, running `apt-get update` once per script run and
# only when something actually has to be installed.
APT_UPDATED=
apt_install() {
	command -v apt-get >/dev/null || die "apt-get not found: cannot install $*"
	if [[ -z $APT_UPDATED ]]; then
		log "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
		APT_UPDATED=1
	fi
	log "installing $*"
	# Keep the packages' own init scripts from starting default instances (PostgreSQL on 5432,
	# Redis on 6379, etcd on 2379, a dockerd without our log): the scripts start what the tests
	# use themselves.
	local policy=/usr/sbin/policy-rc.d added=
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && added=1
	fi
	local rc=0
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 || rc=$?
	[[ -z $added ]] || rm -f "$policy"
	((rc == 0)) || die "apt-get install $* failed"
}

# wait_for SECONDS CMD... retries CMD every half second until it succeeds; fails after SECONDS.
wait_for() {
	local secs=$1
	shift
	local i
	for ((i = 0; i < secs * 2; i++)); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.5
	done
	return 1
}

# npm_tarball NAME VERSION INTEGRITY FILE downloads NAME@VERSION's tarball from the npm registry
# (NPM_REGISTRY, default registry.npmjs.org) into FILE after checking that the SHA-512 integrity
# the registry publishes and the tarball's own checksum both equal INTEGRITY, the one pinned by
# the caller: nothing unpinned is ever extracted.
npm_tarball() {
	local name=$1 version=$2 pinned=$3 file=$4
	local registry=${NPM_REGISTRY:-https://registry.npmjs.org} meta tarball published actual
	meta=$(curl -fsSL "$registry/$name/$version") || die "cannot read $name@$version from $registry"
	tarball=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["tarball"])')
	published=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["integrity"])')
	[ "$published" = "$pinned" ] || die "$name@$version: the registry publishes $published, pinned is $pinned"
	curl -fsSL -o "$file" "$tarball" || die "cannot download $tarball"
	actual="sha512-$(openssl dgst -sha512 -binary "$file" | base64 -w0)"
	[ "$actual" = "$pinned" ] || die "$name@$version: the tarball's checksum is $actual, want $pinned"
}
