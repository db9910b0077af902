#!/usr/bin/env bash
# The Playwright recipe's runtime under Verdict against plain `docker run` of the same image on
# the same machine. Each round runs the recipe both ways, one after the other (folder `all`:
# six tests in Debian's Chromium, one of them failing twice and one flaky, so traces and
# screenshots are written): once with `docker run --rm` and the contract's variables, once as a
# run of a `verdict serve` (SQLite, the Docker engine, its defaults: the run network, memory,
# CPU and process limits, the disk watchdog, the init process, the log pump, the reports copied
# out). It prints, per way, the median of:
#   - wall: `docker run` from start to exit; for Verdict, queued to the end of the run's event
#     stream (what a CI job waits for: reports copied and results read included);
#   - container: the container's own time, started to exited, for docker run (the engine's
#     State); for Verdict the run's durationMs, from its start (claimed) to its end (reports
#     copied out, container removed);
#   - playwright: the duration in Playwright's JSON report (stats.duration), which leaves out
#     the container's start and Node's;
# and Verdict's ratio to `docker run` for each (target <= 1.10).
#
#   scripts/bench-recipes.sh            # 3 rounds
#   BENCH_RECIPES_ROUNDS=5 scripts/bench-recipes.sh
#
# Settings: BENCH_RECIPES_ROUNDS (3), BENCH_RECIPES_ADDR (127.0.0.1:18495), BENCH_RECIPES_ENV
# (extra variables for `verdict serve`, e.g. "VERDICT_RUN_SHM_MB=64" to see the engine's default
# shared memory). Needs the recipe image (examples/recipes/build.sh) and python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ROUNDS=${BENCH_RECIPES_ROUNDS:-3}
ADDR=${BENCH_RECIPES_ADDR:-127.0.0.1:18495}
URL=http://$ADDR
IMAGE=verdict-recipes/playwright:latest
work=$(mktemp -d /tmp/verdict-recipebench.XXXXXX)
pid=
cleanup() {
	[[ -z $pid ]] || kill "$pid" 2>/dev/null || true
	[[ -z $pid ]] || wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

docker image inspect "$IMAGE" >/dev/null 2>&1 ||
	{ echo "bench-recipes: $IMAGE is missing (run examples/recipes/build.sh)" >&2; exit 1; }
echo "== building"
go build -o "$work/verdict" ./cmd/verdict
# shellcheck disable=SC2086 # BENCH_RECIPES_ENV is a list of NAME=value words
env VERDICT_ADDR="$ADDR" VERDICT_DATA_DIR="$work/data" VERDICT_DEV=true VERDICT_LOG_LEVEL=warn ${BENCH_RECIPES_ENV:-} \
	"$work/verdict" serve >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fs "$URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "$URL/healthz" >/dev/null || { cat "$work/serve.log" >&2; echo "bench-recipes: verdict serve did not start" >&2; exit 1; }

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
signup=$(curl -fs -X POST "$URL/api/auth/signup" -H 'Content-Type: application/json' \
	-d '{"email":"bench@example.com","password":"bench-Password-123","name":"Bench","organizationName":"Bench"}')
token=$(json 'd["token"]' <<<"$signup")
org=$(json 'd["user"]["organizationId"]' <<<"$signup")
key=$(curl -fs -X POST "$URL/api/auth/api-keys" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
	-d '{"name":"bench"}' | json 'd["apiKey"]')

now_ms() { date +%s%3N; }
# pw_secs prints stats.duration of the Playwright JSON report on stdin, in seconds.
pw_secs() { python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["duration"]/1000)'; }

# docker_way prints "wall_s container_s playwright_s".
docker_way() {
	local t0 wall name=verdict-recipebench-$RANDOM
	t0=$(now_ms)
	docker run --name "$name" -e CI=true -e FRAMEWORK_AGNOSTIC=true -e TASK_ID=bench -e BASE_URL=http://127.0.0.1:9 \
		"$IMAGE" all >/dev/null 2>&1 || true
	wall=$(($(now_ms) - t0))
	local cont
	cont=$(docker inspect --format '{{.State.StartedAt}} {{.State.FinishedAt}}' "$name" | python3 -c '
import sys, datetime
a, b = (datetime.datetime.fromisoformat(s[:26].rstrip("Z")) for s in sys.stdin.read().split())
print((b - a).total_seconds())')
	echo "${wall}e-3 $cont $(docker cp "$name:/app/results/results.json" - | tar -xO | pw_secs)"
	docker rm "$name" >/dev/null
}

# verdict_way prints "wall_s container_s playwright_s".
verdict_way() {
	local t0 task status out
	t0=$(now_ms)
	task=$(curl -fs -X POST "$URL/api/executions" -H "X-API-Key: $key" -H 'Content-Type: application/json' \
		-d '{"image":"'"$IMAGE"'","baseUrl":"http://127.0.0.1:9"}' | json 'd["taskId"]')
	# The run's event stream ends with the run, as `verdict run` in CI follows it: no polling
	# delay in the wall time.
	curl -fsN "$URL/api/executions/$task/events" -H "X-API-Key: $key" >/dev/null
	local wall=$(($(now_ms) - t0))
	out=$(curl -fs "$URL/api/executions/$task" -H "X-API-Key: $key")
	status=$(json 'd["execution"]["status"]' <<<"$out")
	[[ $status == FAILED ]] || { echo "bench-recipes: run $task ended $status, want FAILED (one test fails on purpose)" >&2; exit 1; }
	echo "${wall}e-3 $(json 'd["execution"]["durationMs"]/1000' <<<"$out") $(curl -fs "$URL/reports/$org/$task/results/results.json" -H "Authorization: Bearer $token" | pw_secs)"
}

echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
# A first run of each way warms the engine's caches and the image's pages; not counted.
docker_way >/dev/null
verdict_way >/dev/null
d_wall=() d_cont=() d_pw=() v_wall=() v_cont=() v_pw=()
for i in $(seq "$ROUNDS"); do
	read -r w c p < <(docker_way)
	d_wall+=("$w") d_cont+=("$c") d_pw+=("$p")
	read -r vw vc vp < <(verdict_way)
	v_wall+=("$vw") v_cont+=("$vc") v_pw+=("$vp")
	printf 'round %d: docker run %.1f s (container %.1f s, playwright %.1f s), verdict %.1f s (container %.1f s, playwright %.1f s)\n' \
		"$i" "$w" "$c" "$p" "$vw" "$vc" "$vp"
done
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
python3 - "${d_wall[*]}" "${d_cont[*]}" "${d_pw[*]}" "${v_wall[*]}" "${v_cont[*]}" "${v_pw[*]}" <<'PY'
import statistics as st, sys
dw, dc, dp, vw, vc, vp = ([float(x) for x in a.split()] for a in sys.argv[1:7])
m = st.median
print(f"\n{'median':<12} {'docker run s':>13} {'verdict s':>10} {'ratio':>6}")
for name, d, v in (("wall", dw, vw), ("container", dc, vc), ("playwright", dp, vp)):
    print(f"{name:<12} {m(d):>13.1f} {m(v):>10.1f} {m(v)/m(d):>6.2f}")
print("target: ratio <= 1.10")
PY
