#!/usr/bin/env bash
# Sharded runs' wall time: the sample suite of 200 tests with skewed durations
# (verdict-examples/sharded: 4 long spec files, 36 short ones) on a `verdict serve` with 4 run
# slots (team plan, 4 runner slots, SQLite, the Docker engine), run three ways:
#   1. 4 shards without history: each shard splits by SHARD_INDEX/SHARD_TOTAL (the framework's
#      own split: contiguous groups of files);
#   2. one container;
#   3. 4 shards with history: Verdict's lists, balanced by the durations run 2 recorded.
# It prints each run's wall time (the run's startedAt to finishedAt), the sharded runs' ratio to
# the single container (target <= 0.30; 0.25 is ideal) and the spread of their shards' own
# times (slowest over fastest; target with history: within 15 %).
#
#   scripts/bench-shards.sh
#   BENCH_SHARDS_UNIT_MS=40 scripts/bench-shards.sh
#
# Settings: BENCH_SHARDS_UNIT_MS (20: a test unit's milliseconds; the single container then
# takes about 53 s), BENCH_SHARDS_ADDR (127.0.0.1:18490). Needs the sample images
# (examples/suites/build.sh) and python3 to read the answers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

UNIT=${BENCH_SHARDS_UNIT_MS:-20}
ADDR=${BENCH_SHARDS_ADDR:-127.0.0.1:18490}
URL=http://$ADDR
work=$(mktemp -d /tmp/verdict-shardbench.XXXXXX)
pid=
cleanup() {
	[[ -z $pid ]] || kill "$pid" 2>/dev/null || true
	[[ -z $pid ]] || wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

docker image inspect verdict-examples/sharded:latest >/dev/null 2>&1 ||
	{ echo "bench-shards: verdict-examples/sharded:latest is missing (run examples/suites/build.sh)" >&2; exit 1; }
echo "== building"
go build -o "$work/verdict" ./cmd/verdict
echo "== load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
VERDICT_ADDR=$ADDR VERDICT_DATA_DIR=$work/data VERDICT_DEV=true VERDICT_DEFAULT_PLAN=team VERDICT_RUNNER_SLOTS=4 \
	VERDICT_LOG_LEVEL=warn "$work/verdict" serve >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fs "$URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
token=$(curl -fs -X POST "$URL/api/auth/signup" -H 'Content-Type: application/json' \
	-d '{"email":"bench@example.com","password":"bench-Password-123","name":"Bench","organizationName":"Bench"}' | json 'd["token"]')
key=$(curl -fs -X POST "$URL/api/auth/api-keys" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
	-d '{"name":"bench"}' | json 'd["apiKey"]')
project=$(curl -fs -X POST "$URL/api/projects" -H "X-API-Key: $key" -H 'Content-Type: application/json' \
	-d '{"name":"bench","image":"verdict-examples/sharded:latest","envVars":[{"key":"UNIT_MS","value":"'"$UNIT"'"}]}' | json 'd["project"]["id"]')

# run SHARDS: queues a run of the project, waits for its end, prints "wall_ms spread" (spread:
# the slowest shard's time over the fastest's, 1 for one container).
run() {
	local task
	task=$(curl -fs -X POST "$URL/api/executions" -H "X-API-Key: $key" -H 'Content-Type: application/json' \
		-d '{"projectId":"'"$project"'","shards":'"$1"'}' | json 'd["taskId"]')
	while :; do
		sleep 0.5
		out=$(curl -fs "$URL/api/executions/$task" -H "X-API-Key: $key")
		status=$(json 'd["execution"]["status"]' <<<"$out")
		case $status in PASSED | FAILED | UNSTABLE | ERROR | CANCELLED) break ;; esac
	done
	[[ $status == PASSED ]] || { echo "bench-shards: run $task ended $status" >&2; exit 1; }
	json '"%d %.3f" % (d["execution"]["durationMs"], (lambda t: max(t)/min(t) if t else 1)([__import__("datetime").datetime.fromisoformat(s["finishedAt"].replace("Z","+00:00")).timestamp()-__import__("datetime").datetime.fromisoformat(s["startedAt"].replace("Z","+00:00")).timestamp() for s in d["execution"]["shards"]]))' <<<"$out"
}

echo "== 4 shards, no history (the framework's own split)"
read -r own own_spread < <(run 4)
echo "== 1 container"
read -r single _ < <(run 1)
echo "== 4 shards, balanced by history"
read -r hist hist_spread < <(run 4)

ratio() { python3 -c "print('%.2f' % ($1/$2))"; }
printf '\n%-42s %8s %8s %10s\n' "run" "wall s" "ratio" "spread"
printf '%-42s %8.1f %8s %10s\n' "1 container" "$(python3 -c "print($single/1000)")" "1.00" "-"
printf '%-42s %8.1f %8s %10s\n' "4 shards, own split (no history)" "$(python3 -c "print($own/1000)")" "$(ratio "$own" "$single")" "$own_spread"
printf '%-42s %8.1f %8s %10s\n' "4 shards, balanced by history" "$(python3 -c "print($hist/1000)")" "$(ratio "$hist" "$single")" "$hist_spread"
echo "targets: ratio with history <= 0.30 (0.25 ideal); spread with history <= 1.15 (slowest shard within 15 % of the fastest)"
