#!/usr/bin/env bash
# Read-path benchmark of the real binary: cold start to /healthz, idle memory, and the
# authenticated list GET /api/executions?limit=25 under load, against a bare net/http handler
# that checks a bearer header and writes a body of the same size, idle and live (runs queued
# through the API and pending, then the same while a remote runner finishes 5 runs a second);
# then the same list read while the retention job deletes the logs and report files of every seeded run (its p99
# before and during). SQLite first, then PostgreSQL. Each figure is printed next to its
# target. The load generator is tools/loadgen (it also seeds the database directly:
# organizations, their admins and finished runs, with a session token per admin).
#
#   scripts/bench.sh                                  # about 2 minutes, then scripts/bench-runs.sh
#   BENCH_DURATION=20s BENCH_RUNS=0 scripts/bench.sh  # longer samples, without the run benchmarks
#
# Settings: BENCH_CLIENTS (32), BENCH_DURATION (10s per sample), BENCH_WARMUP (2s), BENCH_ORGS
# (100), BENCH_RUNS_PER_ORG (100), BENCH_LIVE_PER_ORG (100 runs queued per organization for the
# live figures; 0 skips them), BENCH_LIVE_RATE (5 runs finished a second by the remote runner), BENCH_POSTGRES (a PostgreSQL server URL on which a throwaway
# database is created and dropped; default DATABASE_URL, then VERDICT_TEST_POSTGRES; none: the
# PostgreSQL part is skipped), BENCH_TIMEOUT (900 s for this script's own part), BENCH_RUNS=0
# to skip scripts/bench-runs.sh, BENCH_RETENTION=0 to skip the retention stage,
# BENCH_HISTORY=0 to skip scripts/bench-history.sh, BENCH_SCHEDULES=0 to skip
# scripts/bench-schedules.sh (the schedules' fire delay), BENCH_NOTIFY=0 to skip
# scripts/bench-notify.sh (notifications' delay, and the run drain beside 1,000 slow
# deliveries), VERDICT_BIN and BENCH_LOADGEN to use
# prebuilt binaries.
#
# Figures depend on the machine and on what else runs on it: the load average is printed with
# them. Verdict runs without a runner (VERDICT_RUNNER=none), without Redis (in-memory rate
# limits), and with the executions bucket raised (VERDICT_RATE_LIMITS) so the load measures
# the read path rather than 429s. Everything started is stopped on exit; the script exits
# non-zero if a server fails to start.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

CLIENTS=${BENCH_CLIENTS:-32}
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
ORGS=${BENCH_ORGS:-100}
RUNS_PER_ORG=${BENCH_RUNS_PER_ORG:-100}
LIVE_PER_ORG=${BENCH_LIVE_PER_ORG:-100}
LIVE_RATE=${BENCH_LIVE_RATE:-5}
TIMEOUT=${BENCH_TIMEOUT:-900}
PG_SERVER=${BENCH_POSTGRES:-${DATABASE_URL:-${VERDICT_TEST_POSTGRES:-}}}
ROUTE="/api/executions?limit=25"

work=$(mktemp -d /tmp/verdict-bench.XXXXXX)
pids=()
pgdbs=()
watchdog=

cleanup() {
	local rc=$?
	local p
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	pids=()
	for p in "${pgdbs[@]}"; do
		"$LOADGEN" pgdb drop "$p" >/dev/null 2>&1 || echo "bench: could not drop $p" >&2
	done
	pgdbs=()
	[[ -z $watchdog ]] || kill "$watchdog" 2>/dev/null || true
	rm -rf "$work"
	return "$rc"
}
trap cleanup EXIT
trap 'echo "bench: interrupted" >&2; exit 130' INT TERM

die() {
	echo "bench: ERROR: $*" >&2
	exit 1
}

# The script's own part is bounded: past TIMEOUT seconds it is stopped (and cleans up).
(
	sleep "$TIMEOUT" &
	sp=$!
	trap 'kill $sp 2>/dev/null; exit 0' TERM
	wait "$sp" && echo "bench: timed out after ${TIMEOUT}s" >&2 && kill -TERM $$
) &
watchdog=$!

echo "== building"
VERDICT=${VERDICT_BIN:-}
LOADGEN=${BENCH_LOADGEN:-}
if [[ -z $VERDICT ]]; then
	VERDICT=$work/verdict
	# As scripts/image.sh builds it: the figures are those of the binary operators run.
	CGO_ENABLED=0 go build -trimpath -tags timetzdata -ldflags "-s -w" -o "$VERDICT" ./cmd/verdict
fi
if [[ -z $LOADGEN ]]; then
	LOADGEN=$work/loadgen
	go build -o "$LOADGEN" ./tools/loadgen
fi

JWT_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
RUNNER_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
ENCRYPTION_KEY=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export JWT_SECRET ENCRYPTION_KEY

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# start_verdict NAME DATA_DIR [DATABASE_URL]: starts the binary, waits for /healthz, and sets
# PID, URL and COLD_MS. A server that does not come up fails the script with its log.
start_verdict() {
	local name=$1 dir=$2 db=${3:-} port log t0
	port=$("$LOADGEN" port)
	log=$work/$name.log
	t0=$(date +%s%N)
	env -u REDIS_URL VERDICT_ADDR=127.0.0.1:$port VERDICT_DATA_DIR="$dir" DATABASE_URL="$db" \
		VERDICT_RUNNER=none VERDICT_RUNNER_SECRET="$RUNNER_SECRET" VERDICT_LOG_LEVEL=warn VERDICT_RATE_LIMITS="executions=1000000000/1m" \
		${RETENTION_ENV:-} "$VERDICT" serve >"$log" 2>&1 &
	PID=$!
	pids+=("$PID")
	URL=http://127.0.0.1:$port
	if ! COLD_MS=$("$LOADGEN" wait -url "$URL/healthz" -since "$t0" -timeout 60s -pid "$PID"); then
		echo "--- $log" >&2
		tail -n 30 "$log" >&2
		die "$name: the server did not start"
	fi
}

# stop PID: stops one process this script started.
stop() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	local p keep=()
	for p in "${pids[@]}"; do
		[[ $p == "$1" ]] || keep+=("$p")
	done
	pids=("${keep[@]}")
}

rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }
# anon_mb PID: the part of the RSS that is the process's own memory (heap, stacks), not pages
# of the binary's file, which the kernel shares with its page cache and can drop.
anon_mb() { awk '/^RssAnon/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }
hwm_mb() { awk '/^VmHWM/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }

# field LINE KEY: a key=value figure of a loadgen run line.
field() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k {print $2}'; }

# verdict: "PASS" or "MISS" for a figure against its target (op is < or >=).
check() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { ok = (op == "<") ? v < t : v >= t; print ok ? "PASS" : "MISS" }'; }

# figures LABEL LINE: one loadgen run line, as a row of the table.
figures() {
	printf '   %-26s %8s req/s   p50 %7s ms   p99 %7s ms   errors %s   body %s B\n' \
		"$1" "$(field "$2" rps)" "$(field "$2" p50_ms)" "$(field "$2" p99_ms)" "$(field "$2" errors)" "$(field "$2" body_bytes)"
}

# judge LABEL LINE BARE_LINE MIN_RATIO MAX_P99: a Verdict figure against the bare handler's and
# its targets.
judge() {
	local ratio
	ratio=$(awk -v v="$(field "$2" rps)" -v b="$(field "$3" rps)" 'BEGIN { printf "%.1f", (b > 0 ? 100 * v / b : 0) }')
	printf '   %-26s %8s %% of bare, target >= %s %%: %s;   p99 %s ms, target < %s ms: %s\n' "$1" "$ratio" "$4" \
		"$(check "$ratio" ">=" "$4")" "$(field "$2" p99_ms)" "$5" "$(check "$(field "$2" p99_ms)" "<" "$5")"
	if [[ $(field "$2" errors) != 0 ]]; then
		echo "   (verdict answered errors; loadgen printed the first above)"
	fi
}

# bench_db NAME [DATABASE_URL] MIN_RATIO MAX_P99: seeds, starts Verdict, runs the bare handler
# and Verdict under the same load, and prints the figures with their targets, in three states:
# idle (the seeded finished runs only); live, pending (LIVE_PER_ORG more runs queued through the
# API for every organization and still PENDING: the first page everyone reads is runs still
# going); and live, writes (the same reads while a remote runner, loadgen runner, claims and
# finishes LIVE_RATE runs a second through the runner protocol).
bench_db() {
	local name=$1 db=${2:-} ratio_target=${3:-40} p99_target=${4:-10} size bare_addr bare_pid b v pending live finished
	local dir=$work/$1 tokens=$work/$1.tokens
	mkdir -p "$dir"
	echo "== $name: seeding $ORGS organizations x $RUNS_PER_ORG runs"
	local s0=$SECONDS
	"$LOADGEN" seed -db "$db" -data "$dir" -orgs "$ORGS" -runs "$RUNS_PER_ORG" -jwt-secret "$JWT_SECRET" -tokens "$tokens"
	echo "   seeded in $((SECONDS - s0)) s"
	start_verdict "$name" "$dir" "$db"
	local vpid=$PID
	size=$(curl -sf -o /dev/null -w '%{size_download}' -H "Authorization: Bearer $(head -n1 "$tokens")" "$URL$ROUTE") ||
		die "$name: GET $ROUTE failed"
	"$LOADGEN" bare -size "$size" -addr-file "$work/bare.addr" &
	bare_pid=$!
	pids+=("$bare_pid")
	for _ in $(seq 100); do [[ -s $work/bare.addr ]] && break; sleep 0.05; done
	bare_addr=$(cat "$work/bare.addr")
	rm -f "$work/bare.addr"

	echo "== $name: GET $ROUTE, $CLIENTS clients, $DURATION each (load average before: $(loadavg))"
	b=$("$LOADGEN" run -url "http://$bare_addr$ROUTE" -tokens "$tokens" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP")
	stop "$bare_pid"
	v=$("$LOADGEN" run -url "$URL$ROUTE" -tokens "$tokens" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP")
	local after_rss after_hwm
	after_rss=$(rss_mb "$vpid")
	after_hwm=$(hwm_mb "$vpid")

	if [[ $LIVE_PER_ORG -gt 0 ]]; then
		local q0=$SECONDS
		queued=$("$LOADGEN" queue -url "$URL" -tokens "$tokens" -per-org "$LIVE_PER_ORG") || die "$name: queueing runs failed"
		echo "   queued $queued runs through the API in $((SECONDS - q0)) s (pending: no runner yet)"
		pending=$("$LOADGEN" run -url "$URL$ROUTE" -tokens "$tokens" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP")
		"$LOADGEN" runner -url "$URL" -secret "$RUNNER_SECRET" -rate "$LIVE_RATE" >"$work/runner.out" &
		local runner_pid=$!
		pids+=("$runner_pid")
		live=$("$LOADGEN" run -url "$URL$ROUTE" -tokens "$tokens" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP")
		stop "$runner_pid"
		finished=$(cat "$work/runner.out")
	fi
	stop "$vpid"
	figures "bare net/http" "$b"
	figures "verdict ($name), idle" "$v"
	if [[ -n ${pending:-} ]]; then
		figures "  live: runs pending" "$pending"
		figures "  live: $LIVE_RATE runs/s ending" "$live"
	fi
	judge "idle" "$v" "$b" "$ratio_target" "$p99_target"
	if [[ -n ${pending:-} ]]; then
		judge "live: runs pending" "$pending" "$b" "$ratio_target" "$p99_target"
		judge "live: runs ending" "$live" "$b" "$ratio_target" "$p99_target"
		printf '   %-26s %8s (while measured, %s/s asked)\n' "runs finished by the runner" "${finished:-?}" "$LIVE_RATE"
	fi
	printf '   %-26s %8s MB (peak %s MB)\n' "RSS after the idle load" "$after_rss" "$after_hwm"
	echo "   load average after: $(loadavg)"
}

# bench_retention NAME [DATABASE_URL]: seeds ORGS x RUNS_PER_ORG runs of team organizations
# that ended 20 to 27 days ago, each with a log of 4 KiB and a report folder on disk, inside
# their plan's 90 days; reads the run list under load (before), then sets every organization's
# logs days to 10 through the API and reads the list again from the first run whose files the
# retention job deleted until every run's are (during). Prints both p99s, the target, and how
# long the job took.
bench_retention() {
	local name=$1 db=${2:-} before during want expired
	local dir=$work/$1-retention tokens=$work/$1-retention.tokens
	mkdir -p "$dir"
	want=$((ORGS * RUNS_PER_ORG))
	echo "== $name: retention: seeding $ORGS organizations x $RUNS_PER_ORG runs with logs and reports"
	local s0=$SECONDS
	"$LOADGEN" seed -db "$db" -data "$dir" -orgs "$ORGS" -runs "$RUNS_PER_ORG" -jwt-secret "$JWT_SECRET" -tokens "$tokens" \
		-age 480h -log-chunks 4 -reports
	echo "   seeded in $((SECONDS - s0)) s"
	RETENTION_ENV="VERDICT_RETENTION_INTERVAL=2s" start_verdict "$name-retention" "$dir" "$db"
	local vpid=$PID
	echo "== $name: GET $ROUTE, $CLIENTS clients, before and while retention deletes $want runs' logs and reports (load average: $(loadavg))"
	before=$("$LOADGEN" run -url "$URL$ROUTE" -tokens "$tokens" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP")
	"$LOADGEN" run -url "$URL$ROUTE" -tokens "$tokens" -clients "$CLIENTS" -warmup 0s -expiry-db "$db" -expiry-data "$dir" \
		-expiry-want "$want" >"$work/during.out" &
	local load_pid=$!
	pids+=("$load_pid")
	sleep 1
	"$LOADGEN" retention -url "$URL" -tokens "$tokens" -logs-days 10 || die "$name: setting the retention failed"
	wait "$load_pid" || die "$name: the load during retention failed"
	during=$(cat "$work/during.out")
	# The last batch's files are deleted just after its runs are marked: let the job finish.
	for _ in $(seq 120); do
		[[ -z $(find "$dir/reports" -type f -print -quit 2>/dev/null) ]] && break
		sleep 0.5
	done
	stop "$vpid"
	expired=$(field "$during" expired)
	printf '   %-22s %8s req/s   p50 %7s ms   p99 %7s ms   errors %s\n' \
		"before" "$(field "$before" rps)" "$(field "$before" p50_ms)" "$(field "$before" p99_ms)" "$(field "$before" errors)"
	printf '   %-22s %8s req/s   p50 %7s ms   p99 %7s ms   errors %s\n' \
		"during retention" "$(field "$during" rps)" "$(field "$during" p50_ms)" "$(field "$during" p99_ms)" "$(field "$during" errors)"
	printf '   %-22s %8s ms       target <= 20 ms   %s\n' "p99 during retention" "$(field "$during" p99_ms)" \
		"$(check "$(field "$during" p99_ms)" "<" 20.001)"
	printf '   %-22s %8s runs in %s s (of %s)   %s\n' "files expired" "$expired" "$(field "$during" expiry_s)" "$want" \
		"$([[ $expired == "$want" ]] && echo PASS || echo MISS)"
	if [[ -d $dir/reports ]]; then
		printf '   %-22s %8s\n' "report files left" "$(find "$dir/reports" -type f | wc -l)"
	fi
	echo "   load average after: $(loadavg)"
}

echo "== cold start and idle memory (fresh SQLite data folder, migrations included; 3 starts)"
colds=()
rsss=()
anons=()
for i in 1 2 3; do
	start_verdict "cold$i" "$work/cold$i"
	colds+=("$COLD_MS")
	sleep 2
	rsss+=("$(rss_mb "$PID")")
	anons+=("$(anon_mb "$PID")")
	stop "$PID"
done
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
printf '   %-22s %8s ms       (starts: %s)  baseline ~110 ms\n' "cold start to /healthz" "$(median "${colds[@]}")" "${colds[*]}"
printf '   %-22s %8s MB       (starts: %s)  binary %s MB\n' "idle RSS" "$(median "${rsss[@]}")" "${rsss[*]}" \
	"$(awk -v b="$(stat -c %s "$VERDICT")" 'BEGIN { printf "%.0f", b / 1048576 }')"
printf '   %-22s %8s MB       (starts: %s)  target < 30 MB: %s; the rest are pages of the binary\n' "  of it anonymous" \
	"$(median "${anons[@]}")" "${anons[*]}" "$(check "$(median "${anons[@]}")" "<" 30)"

bench_db sqlite
[[ ${BENCH_RETENTION:-1} == 0 ]] || bench_retention sqlite

if [[ -n $PG_SERVER ]]; then
	pgdb=$("$LOADGEN" pgdb create "$PG_SERVER") || die "cannot create a PostgreSQL database on the server"
	pgdbs+=("$pgdb")
	bench_db postgres "$pgdb" 30 25
	if [[ ${BENCH_RETENTION:-1} != 0 ]]; then
		pgdb=$("$LOADGEN" pgdb create "$PG_SERVER") || die "cannot create a PostgreSQL database on the server"
		pgdbs+=("$pgdb")
		bench_retention postgres "$pgdb"
	fi
else
	echo "== postgres: skipped (set BENCH_POSTGRES, DATABASE_URL or VERDICT_TEST_POSTGRES)"
fi

# This script's part is done: the run benchmarks keep their own bounds.
kill "$watchdog" 2>/dev/null || true
watchdog=
if [[ ${BENCH_RUNS:-1} != 0 && -x scripts/bench-runs.sh ]]; then
	echo "== scripts/bench-runs.sh"
	scripts/bench-runs.sh
fi
if [[ ${BENCH_SCHEDULES:-1} != 0 ]]; then
	echo "== scripts/bench-schedules.sh"
	scripts/bench-schedules.sh
fi
if [[ ${BENCH_HISTORY:-1} != 0 ]]; then
	echo "== scripts/bench-history.sh"
	scripts/bench-history.sh
fi
if [[ ${BENCH_NOTIFY:-1} != 0 ]]; then
	echo "== scripts/bench-notify.sh"
	scripts/bench-notify.sh
fi
