#!/usr/bin/env bash
# Notifications' figures (BenchmarkNotifications in internal/app/notifybench_test.go) on the real
# engine and database: the delay from a run's end to its webhook event (p50, p99; target p99 <
# 2 s), and the drain of a batch of runs without, then with, 1,000 deliveries pending to a
# receiver that takes 1 s each (target: the drain no more than 10 % longer), with the delay to a
# quick receiver during that backlog. SQLite, then PostgreSQL. Each figure is printed beside its
# target; the benchmark's full log is kept in a folder this script names.
#
#   scripts/bench-notify.sh                                   # about 3 minutes on 2 cores
#   VERDICT_BENCH_NOTIFY_RUNS=20 VERDICT_BENCH_DRAIN_RUNS=20 scripts/bench-notify.sh
#
# Settings: VERDICT_BENCH_NOTIFY_RUNS (40 runs for the delay), VERDICT_BENCH_DRAIN_RUNS (40 runs
# per drain), BENCH_NOTIFY_DBS ("sqlite postgres"; postgres needs VERDICT_TEST_POSTGRES, which
# scripts/services.sh sets).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

vars=$(scripts/services.sh)
eval "$vars"
examples/suites/build.sh >&2

out=$(mktemp -d "${TMPDIR:-/tmp}/verdict-bench-notify.XXXXXX")
go test -tags integration -c -o "$out/app.test" ./internal/app
echo "bench-notify: logs in $out" >&2
failed=0
for db in ${BENCH_NOTIFY_DBS:-sqlite postgres}; do
	if [[ $db == postgres && -z ${VERDICT_TEST_POSTGRES:-} ]]; then
		echo "== postgres: skipped (no VERDICT_TEST_POSTGRES)"
		continue
	fi
	echo "== $db (load $(cut -d' ' -f1-3 /proc/loadavg))"
	status=0
	(cd internal/app && VERDICT_BENCH_DB=$db "$out/app.test" -test.run '^$' -test.bench 'BenchmarkNotifications$' \
		-test.benchtime 1x -test.timeout 30m -test.v) >"$out/$db.txt" 2>&1 || status=$?
	grep -E 'notifybench_test.go' "$out/$db.txt" | sed -E 's/^ *notifybench_test.go:[0-9]+: /   /' || true
	if ((status != 0)); then
		echo "bench-notify: $db failed (exit $status); its log: $out/$db.txt" >&2
		failed=1
	fi
done
exit "$failed"
