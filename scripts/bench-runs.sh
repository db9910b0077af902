#!/usr/bin/env bash
# Run-plane benchmarks (internal/app/runbench_test.go): Verdict's runs against `docker run --rm`
# of the same sample images, on the real engine, database and Socket.IO, with full logs (-v; without
# it the testing package cuts each benchmark's breakdown at 10 lines).
#
#   scripts/bench-runs.sh                          # all of them, about 2-3 minutes on 2 cores
#   BENCH=BenchmarkRunDrain scripts/bench-runs.sh  # one of them
#   VERDICT_BENCH_DB=postgres VERDICT_BENCH_DRAIN_RUNS=40 VERDICT_BENCH_SAMPLES=12 scripts/bench-runs.sh
#
# Extra arguments go to `go test` (e.g. -count 3).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

vars=$(scripts/services.sh)
eval "$vars"
examples/suites/build.sh >&2

exec go test -p 1 -count 1 -run '^$' -bench "${BENCH:-BenchmarkRun}" -benchtime 1x -timeout 15m -v ./internal/app "$@"
