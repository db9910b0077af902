#!/usr/bin/env bash
# Remote runners' drain: one server with no runner of its own (VERDICT_RUNNER=none), then the
# same 100 runs of the pass image drained by one `verdict runner` with 4 slots and by two
# runners with 2 slots each, on this host's Docker engine. Prints runs/s of each and their ratio.
#
#   scripts/bench-runners.sh               # RUNS=100 by default; about 2 minutes on 2 cores
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

eval "$(scripts/services.sh)"
examples/suites/build.sh >&2

runs=${RUNS:-100}
image=verdict-examples/pass:latest
out=$(mktemp -d "${TMPDIR:-/tmp}/verdict-bench-runners.XXXXXX")
port=18931
url=http://127.0.0.1:$port
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

go build -o "$out/verdict" ./cmd/verdict
echo "bench-runners: logs in $out" >&2

VERDICT_DEV=true VERDICT_ADDR=127.0.0.1:$port VERDICT_DATA_DIR="$out/data" VERDICT_RUNNER=none \
	VERDICT_RUNNER_SECRET=$secret VERDICT_DEFAULT_PLAN=enterprise VERDICT_PUBLIC_URL=$url \
	VERDICT_RATE_LIMITS=executions=100000/1m,api=100000/1m,signup=1000/1m VERDICT_LOG_LEVEL=warn \
	"$out/verdict" serve >"$out/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -fsS "$url/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$url/healthz" >/dev/null || { echo "bench-runners: the server did not start" >&2; tail "$out/server.log" >&2; exit 1; }

token=$(curl -fsS -X POST "$url/api/auth/signup" -H 'Content-Type: application/json' \
	-d '{"email":"bench@example.com","password":"Bench-pass-1!","name":"Bench","organizationName":"Bench Co"}' |
	sed -E 's/.*"token":"([^"]+)".*/\1/')
[[ -n $token ]] || { echo "bench-runners: signup failed" >&2; exit 1; }

active() {
	curl -fsS "$url/api/executions?status=PENDING,RUNNING,ANALYZING&limit=1" -H "Authorization: Bearer $token" |
		sed -E 's/.*"total":([0-9]+).*/\1/'
}

# drain NAME SLOTS... starts one runner per SLOTS value, queues $runs runs, waits for all to end
# and prints runs/s.
drain() {
	local name=$1
	shift
	local rp=() i=0
	for slots in "$@"; do
		i=$((i + 1))
		VERDICT_RUNNER_SECRET=$secret VERDICT_RUNNER_SLOTS=$slots VERDICT_RUNNER_NAME="$name-$i" VERDICT_LOG_LEVEL=warn \
			"$out/verdict" runner --server "$url" >"$out/runner-$name-$i.log" 2>&1 &
		rp+=($!)
	done
	local start end
	start=$(date +%s.%N)
	for n in $(seq "$runs"); do
		curl -fsS -o /dev/null -X POST "$url/api/executions" -H "Authorization: Bearer $token" \
			-H 'Content-Type: application/json' -d "{\"image\":\"$image\",\"taskId\":\"$name-$n\"}"
	done
	local deadline=$((SECONDS + 600))
	while (($(active) > 0)); do
		((SECONDS < deadline)) || { echo "bench-runners: $name did not drain in 10 minutes" >&2; exit 1; }
		sleep 0.2
	done
	end=$(date +%s.%N)
	for p in "${rp[@]}"; do kill "$p" 2>/dev/null || true; done
	wait "${rp[@]}" 2>/dev/null || true
	awk -v s="$start" -v e="$end" -v n="$runs" -v name="$name" 'BEGIN { printf "%s %.3f\n", name, n / (e - s) }'
}

one=$(drain one 4)
two=$(drain two 2 2)
failed=$(curl -fsS "$url/api/executions?status=FAILED,ERROR,CANCELLED&limit=1" -H "Authorization: Bearer $token" |
	sed -E 's/.*"total":([0-9]+).*/\1/')
r1=${one#* } r2=${two#* }
echo
echo "Remote runners, $runs runs of $image each side (load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '  one runner, 4 slots              %8.3f runs/s\n' "$r1"
printf '  two runners, 2 slots each        %8.3f runs/s\n' "$r2"
awk -v a="$r1" -v b="$r2" 'BEGIN { printf "  two / one                        %8.3f x\n", b / a }'
echo "  runs not PASSED                  $failed"
