#!/usr/bin/env bash
# Chaos stage: the real service through real faults. Starts `verdict serve` (two replicas, the
# binary built from this tree) on a PostgreSQL cluster and a Redis server of its own, behind a
# small load balancer, with a remote `verdict runner` on the Docker engine, runs suites, and
# injects one fault at a time while runs are in flight and queued and clients keep calling:
# PostgreSQL stopped for 20 s, Redis stopped for 20 s, the Docker engine restarted mid-run, the
# runner frozen (SIGSTOP) within and then past its lease, one replica killed (SIGKILL)
# mid-request, and the replicas' data folder full (a 64 MiB ext4 image on a loop device).
# The driver is tools/chaos; its doc comment and checks.go say what is checked.
# It prints what became of every run and request per fault and a summary table, and exits 1
# when a check fails, 2 when it cannot set up. About 4 minutes; needs root.
#
#   scripts/chaos.sh                              # every fault, on the shared Docker engine
#   CHAOS_FAULTS=postgres,replica scripts/chaos.sh
#   CHAOS_ENGINE=own scripts/chaos.sh             # a Docker engine of its own (see below)
#
# Settings: CHAOS_FAULTS (postgres,redis,engine,freeze,lease,replica,disk), CHAOS_TIMEOUT (300 s
# for the whole script), CHAOS_ENGINE: `shared` (default) runs the suites on the engine
# scripts/services.sh starts and restarts it with that script (run this when nothing else uses
# the engine, as scripts/test.sh does after the Go tests); `own` starts a private dockerd
# (its own data root, socket and containerd namespace, no iptables, run network
# verdict-chaos) so that other work on the machine is not disturbed. The work folder (logs of
# every process) is removed on success and kept on failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

LOG_PREFIX=chaos
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

FAULTS=${CHAOS_FAULTS:-postgres,redis,engine,freeze,lease,replica,disk}
TIMEOUT=${CHAOS_TIMEOUT:-300}
ENGINE=${CHAOS_ENGINE:-shared}
IMAGE=verdict-examples/slow:latest

[[ $(id -u) == 0 ]] || die "needs root: it mounts a file system, runs PostgreSQL as postgres and signals the Docker engine"
[[ $ENGINE == shared || $ENGINE == own ]] || die "CHAOS_ENGINE: want shared or own, got $ENGINE"

# The Docker engine (and the rest of the test services; each is reused when it answers), and
# the sample image the runs use.
eval "$(scripts/services.sh)"
VERDICT_EXAMPLES_PYTEST=0 examples/suites/build.sh >&2

pg_bin=
for d in /usr/local/bin /usr/lib/postgresql/*/bin; do
	if [[ -x $d/initdb && -x $d/pg_ctl ]]; then
		pg_bin=$d
		break
	fi
done
[[ -n $pg_bin ]] || die "no initdb/pg_ctl found (scripts/services.sh installs PostgreSQL)"
for c in redis-server mkfs.ext4 mount runuser; do
	command -v "$c" >/dev/null || die "$c not found"
done

work=$(mktemp -d /tmp/verdict-chaos.XXXXXX)
# The postgres user runs its cluster in here.
chmod 755 "$work"
runner_name=chaos-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
driver_pid=
watchdog=
own_pidfile=$work/engine/docker.pid

cleanup() {
	local rc=$?
	[[ -z $watchdog ]] || kill "$watchdog" 2>/dev/null || true
	if [[ -n $driver_pid ]] && kill -0 "$driver_pid" 2>/dev/null; then
		kill -TERM "$driver_pid" 2>/dev/null || true
		wait "$driver_pid" 2>/dev/null || true
	fi
	# What the driver could not stop itself (it was killed): its processes, the runs'
	# containers, the database, the mount.
	# Each line is "pid start-time": a pid whose process started at another time is no longer
	# the driver's child, and is left alone.
	if [[ -s $work/pids ]]; then
		local p st now
		while read -r p st; do
			now=$(sed -E 's/.*\) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f20) || continue
			[[ -n $st && $now == "$st" ]] || continue
			kill -CONT "$p" 2>/dev/null || true
			kill -KILL "$p" 2>/dev/null || true
		done <"$work/pids"
	fi
	local dh=()
	[[ $ENGINE == own ]] && dh=(-H "unix://$work/engine/docker.sock")
	docker "${dh[@]}" ps -aq --filter "label=dev.verdict.runner=remote:$runner_name" 2>/dev/null |
		xargs -r docker "${dh[@]}" rm -f >/dev/null 2>&1 || true
	if [[ -s $work/pg/data/postmaster.pid ]]; then
		runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
	fi
	if mountpoint -q "$work/data" 2>/dev/null; then
		umount "$work/data" || umount -l "$work/data" || true
	fi
	if [[ $ENGINE == own && -s $own_pidfile ]]; then
		local p
		p=$(cat "$own_pidfile")
		kill -TERM "$p" 2>/dev/null || true
		for _ in $(seq 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
		ip link del verdict-chaos 2>/dev/null || true
	elif [[ $ENGINE == shared ]] && ! docker info >/dev/null 2>&1; then
		log "the Docker engine does not answer: starting it again"
		"$repo/scripts/services.sh" >/dev/null || true
	fi
	if ((rc == 0)); then
		rm -rf "$work"
	else
		# The logs stay; the binaries, the disk image, the database and the engine's images go.
		rm -rf "$work/verdict" "$work/chaos" "$work/data.img" "$work/pg/data" "$work/engine/root" "$work/engine/exec"
		log "logs kept in $work"
	fi
	return "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

log "building verdict and the driver (work folder $work)"
# Built as scripts/image.sh builds the image's binary, so that its compiled packages are reused.
CGO_ENABLED=0 go build -trimpath -tags timetzdata -o "$work/verdict" ./cmd/verdict
go build -o "$work/chaos" ./tools/chaos

engine_args=()
if [[ $ENGINE == shared ]]; then
	# The engine scripts/services.sh starts (dockerd's default pid file), started again by it.
	engine_args=(-engine-pidfile /var/run/docker.pid -engine-start "'$repo/scripts/services.sh' >/dev/null")
else
	mkdir -p "$work/engine"
	sock=unix://$work/engine/docker.sock
	start_own="setsid nohup /usr/sbin/dockerd --data-root '$work/engine/root' --exec-root '$work/engine/exec' \
--pidfile '$own_pidfile' -H '$sock' --bridge=none --iptables=false --ip-masq=false \
--containerd-namespace verdict-chaos --containerd-plugins-namespace verdict-chaos-plugins \
>>'$work/engine/dockerd.log' 2>&1 </dev/null & \
for i in \$(seq 120); do docker -H '$sock' info >/dev/null 2>&1 && exit 0; sleep 0.5; done; exit 1"
	log "starting a Docker engine of its own ($sock)"
	bash -c "$start_own" || die "the private Docker engine did not start (see $work/engine/dockerd.log)"
	docker save "$IMAGE" | docker -H "$sock" load >/dev/null
	engine_args=(-docker-host "$sock" -run-network verdict-chaos -engine-pidfile "$own_pidfile" -engine-start "$start_own")
fi

# From here the script is bounded: past TIMEOUT seconds it is stopped (and cleans up).
(
	sleep "$TIMEOUT" &
	sp=$!
	trap 'kill $sp 2>/dev/null; exit 0' TERM
	wait "$sp" && echo "chaos: timed out after ${TIMEOUT}s" >&2 && kill -TERM $$
) &
watchdog=$!

log "faults: $FAULTS"
"$work/chaos" -verdict "$work/verdict" -work "$work" -pg-bin "$pg_bin" -image "$IMAGE" -runner-name "$runner_name" \
	-faults "$FAULTS" -timeout "$((TIMEOUT - 15))s" "${engine_args[@]}" &
driver_pid=$!
rc=0
wait "$driver_pid" || rc=$?
driver_pid=
exit "$rc"
