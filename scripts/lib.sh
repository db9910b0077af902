# shellcheck shell=bash
# Shell helpers the service scripts share (scripts/services.sh, scripts/kube-cluster.sh).
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
