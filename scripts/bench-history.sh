#!/usr/bin/env bash
# Tests' histories at scale (tools/histbench): a test's history, the test search page and
# recording a run of 2,000 tests, sampled while other runs are being recorded. PostgreSQL with
# 10 million test results (200 organizations × 500 runs × 100 tests), then SQLite with 1
# million (20 organizations). Each figure is printed beside its target.
#
#   scripts/bench-history.sh                       # seeding 10 M rows takes a few minutes
#   BENCH_HISTORY_PG_ORGS=20 scripts/bench-history.sh
#
# Settings: BENCH_HISTORY_PG_ORGS (200), BENCH_HISTORY_SQLITE_ORGS (20), BENCH_HISTORY_RUNS
# (500 per organization), BENCH_HISTORY_TESTS (100 per run), BENCH_POSTGRES (a PostgreSQL
# server URL on which a throwaway database is created and dropped; default DATABASE_URL, then
# VERDICT_TEST_POSTGRES; none: the PostgreSQL part is skipped).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PG_SERVER=${BENCH_POSTGRES:-${DATABASE_URL:-${VERDICT_TEST_POSTGRES:-}}}
RUNS=${BENCH_HISTORY_RUNS:-500}
TESTS=${BENCH_HISTORY_TESTS:-100}
work=$(mktemp -d /tmp/verdict-histbench.XXXXXX)
pgdb=
cleanup() {
	[[ -z $pgdb ]] || "$work/loadgen" pgdb drop "$pgdb" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building"
go build -o "$work/histbench" ./tools/histbench
go build -o "$work/loadgen" ./tools/loadgen
echo "== load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

if [[ -n $PG_SERVER ]]; then
	pgdb=$("$work/loadgen" pgdb create "$PG_SERVER")
	echo "== postgres"
	"$work/histbench" -db "$pgdb" -orgs "${BENCH_HISTORY_PG_ORGS:-200}" -runs "$RUNS" -tests "$TESTS"
	"$work/loadgen" pgdb drop "$pgdb"
	pgdb=
else
	echo "== postgres: skipped (set BENCH_POSTGRES, DATABASE_URL or VERDICT_TEST_POSTGRES)"
fi
echo "== sqlite"
mkdir "$work/sqlite"
"$work/histbench" -data "$work/sqlite" -orgs "${BENCH_HISTORY_SQLITE_ORGS:-20}" -runs "$RUNS" -tests "$TESTS"
