#!/usr/bin/env bash
# Run-plane benchmarks (internal/app/runbench_test.go): Verdict's runs against `docker run --rm`
# of the same sample images, on the real engine, database and Socket.IO. Their full logs (-v)
# go to a folder that is kept; at the end each figure is printed next to its target, with the
# load average at the start and end of its benchmark (figures on a shared machine are noisy:
# compare the two sides of one benchmark, measured turn about, not figures from another time).
#
#   scripts/bench-runs.sh                               # everything, about 15 minutes on 2 cores
#   BENCH=drain scripts/bench-runs.sh                   # some of: drain drain-pg latency first collect
#   VERDICT_BENCH_DRAIN_RUNS=40 DRAIN_ROUNDS=1 scripts/bench-runs.sh
#
# Settings: BENCH (the parts to run, space-separated), DRAIN_ROUNDS (2: rounds of the drain,
# the sides taking turns going first), LATENCY_RUNS (3: runs per log-latency case),
# VERDICT_BENCH_DRAIN_RUNS (100), VERDICT_BENCH_SAMPLES (8: runs per side for the first log).
# drain-pg needs PostgreSQL (VERDICT_TEST_POSTGRES, which scripts/services.sh sets). The SQLite
# drain also drains `docker run --rm` with a run's confinement (init, limits, the run network with
# a namespace per container, as before network sandboxes): the ratio to plain docker shows what
# that confinement costs the engine.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

vars=$(scripts/services.sh)
eval "$vars"
examples/suites/build.sh >&2

parts=${BENCH:-drain drain-pg latency first collect}
out=$(mktemp -d "${TMPDIR:-/tmp}/verdict-bench-runs.XXXXXX")
go test -tags integration -c -o "$out/app.test" ./internal/app
echo "bench-runs: logs in $out" >&2

load() { cut -d' ' -f1-3 /proc/loadavg; }

# bench NAME PATTERN BENCHTIME [VAR=value...] runs one benchmark into $out/NAME.txt.
bench() {
	local name=$1 pattern=$2 times=$3
	shift 3
	echo "== $name (load $(load))" >&2
	echo "load-before $(load)" >"$out/$name.txt"
	local status=0
	(cd internal/app && env "$@" "$out/app.test" -test.run '^$' -test.bench "$pattern" -test.benchtime "$times" \
		-test.timeout 30m -test.v) >>"$out/$name.txt" 2>&1 || status=$?
	echo "load-after $(load)" >>"$out/$name.txt"
	grep -E '^\s+runbench_test|^\s{6,}\S|^Benchmark.*ns/op|FAIL|panic' "$out/$name.txt" >&2 || true
	if ((status != 0)); then
		echo "bench-runs: $name failed (exit $status); its log: $out/$name.txt" >&2
		failed=1
	fi
}
failed=0

for p in $parts; do
	case $p in
	drain) bench drain 'BenchmarkRunDrain$' "${DRAIN_ROUNDS:-2}x" VERDICT_BENCH_DB=sqlite VERDICT_BENCH_DRAIN_CONFINED=1 ;;
	drain-pg)
		if [[ -n ${VERDICT_TEST_POSTGRES:-} ]]; then
			bench drain-pg 'BenchmarkRunDrain$' "${DRAIN_ROUNDS:-2}x" VERDICT_BENCH_DB=postgres
		else
			echo "== drain-pg skipped: no PostgreSQL (VERDICT_TEST_POSTGRES)" >&2
		fi
		;;
	latency) bench latency 'BenchmarkRunLogLatency' "${LATENCY_RUNS:-3}x" ;;
	first) bench first 'BenchmarkRunFirstLog$' 1x ;;
	collect) bench collect 'BenchmarkRunReportCollect$' 3x ;;
	*)
		echo "bench-runs: unknown part $p (want drain drain-pg latency first collect)" >&2
		exit 2
		;;
	esac
done

# metric FILE BENCHMARK UNIT prints the benchmark's figure in that unit, "-" when absent.
metric() {
	[[ -f $out/$1.txt ]] || {
		echo -
		return
	}
	awk -v b="$2" -v u="$3" '$1 ~ "^"b"(-[0-9]+)?$" { for (i = 3; i <= NF; i++) if ($i == u) { print $(i-1); found = 1; exit } }
		END { if (!found) print "-" }' "$out/$1.txt"
}
loads() { awk '/^load-before/ { b = $2 " " $3 " " $4 } /^load-after/ { a = $2 " " $3 " " $4 } END { print "load " b " -> " a }' "$out/$1.txt"; }

# row LABEL VALUE [OP TARGET] UNIT prints a figure, beside its target and whether it meets it.
row() {
	if (($# == 3)); then
		printf '  %-66s %13s %s\n' "$1" "$2" "$3"
		return
	fi
	local verdict=""
	if [[ $2 != -* ]]; then
		verdict=$(awk -v v="$2" -v op="$3" -v t="$4" 'BEGIN { ok = (op == ">=") ? v >= t : v <= t; print ok ? "ok" : "MISSED" }')
	fi
	printf '  %-66s %13s %-3s target %s %s %s\n' "$1" "$2" "$5" "$3" "$4" "$verdict"
}

echo
echo "Run-plane figures (targets beside them)"
for f in drain drain-pg; do
	[[ -f $out/$f.txt ]] || continue
	db=sqlite
	[[ $f == drain-pg ]] && db=postgres
	echo "Throughput, ${VERDICT_BENCH_DRAIN_RUNS:-100} runs of the pass image, 4 slots, $db ($(loads $f))"
	row "Verdict runs/s / runs/s of a pool of 4 docker run --rm" "$(metric $f BenchmarkRunDrain throughput-ratio)" ">=" 0.9 "x"
	row "  Verdict runs/s" "$(metric $f BenchmarkRunDrain verdict-runs/s)" ""
	row "  docker run --rm runs/s" "$(metric $f BenchmarkRunDrain docker-runs/s)" ""
	row "  report copies per run" "$(metric $f BenchmarkRunDrain verdict-copies/run)" "<=" 1 ""
	if [[ $f == drain ]]; then
		row "  docker run --rm with a run's limits, own namespace, runs/s / plain's" "$(metric $f BenchmarkRunDrain confined-ratio)" "x"
		row "  Verdict runs/s / runs/s of that confined pool" "$(metric $f BenchmarkRunDrain throughput-ratio-vs-confined)" "x"
	fi
	row "  host CPU per run, Verdict (engine daemons + Verdict)" "$(metric $f BenchmarkRunDrain verdict-host-cpu-ms/run)" ms
	row "  host CPU per run, docker run --rm (engine daemons + CLI)" "$(metric $f BenchmarkRunDrain docker-host-cpu-ms/run)" ms
done
if [[ -f $out/latency.txt ]]; then
	echo "Live log latency, engine stamp -> Socket.IO client, ${LATENCY_RUNS:-3} runs of 30 lines ($(loads latency))"
	l=BenchmarkRunLogLatency/interval=100ms
	row "a line every 100 ms: median of the worst run" "$(metric latency $l verdict-abs-median-worst-run-ms)" "<=" 20 ms
	row "a line every 100 ms: p99 of the worst run" "$(metric latency $l verdict-abs-p99-worst-run-ms)" "<=" 100 ms
	row "  median / p99 over all runs" "$(metric latency $l verdict-abs-median-ms) / $(metric latency $l verdict-abs-p99-ms)" ms
	row "  docker run --rm (attach), median" "$(metric latency $l docker-abs-median-ms)" ms
	l=BenchmarkRunLogLatency/interval=20ms
	row "a line every 20 ms (batched, one event per 50 ms at most): p99" "$(metric latency $l verdict-abs-p99-ms)" "<=" 100 ms
fi
if [[ -f $out/first.txt ]]; then
	echo "First log line, POST -> Socket.IO client vs exec -> docker run stdout ($(loads first))"
	row "Verdict, median" "$(metric first BenchmarkRunFirstLog verdict-median-ms)" ms
	row "docker run --rm, median" "$(metric first BenchmarkRunFirstLog docker-median-ms)" ms
	row "  dispatch: POST -> container created (docker: exec -> created)" "$(metric first BenchmarkRunFirstLog verdict-created-ms) / $(metric first BenchmarkRunFirstLog docker-created-ms)" ms
	row "  printed -> client (engine stamp -> Socket.IO event)" "$(metric first BenchmarkRunFirstLog verdict-printed-to-client-ms)" "<=" 5 ms
	row "  Verdict - docker, median (mostly the locked-down container's start)" "$(metric first BenchmarkRunFirstLog overhead-median-ms)" ms
fi
if [[ -f $out/collect.txt ]]; then
	echo "Report collection on an exited pass container ($(loads collect))"
	row "one CopyOut of /app (the runner's)" "$(metric collect BenchmarkRunReportCollect copy-app-once-ms)" ms
	row "one CopyOut per default folder (the fallback for a big /app)" "$(metric collect BenchmarkRunReportCollect copy-6-folders-ms)" ms
fi
echo "Full logs: $out"
exit "$failed"
