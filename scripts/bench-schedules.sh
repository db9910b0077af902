#!/usr/bin/env bash
# Schedules' fire delay (tools/schedbench): the time from a schedule's due instant to its run
# queued, with two replicas' workers polling one database, 1,000 runs pending and writers
# queueing and listing runs throughout; and the cost of an idle poll. SQLite, then PostgreSQL;
# about a minute in all. Each figure is printed beside its target (fire delay p99 < 1 s).
#
#   scripts/bench-schedules.sh
#   BENCH_SCHEDULES_FOR=60s scripts/bench-schedules.sh
#
# Settings: BENCH_SCHEDULES_FOR (25s of measure per database), BENCH_POSTGRES (a PostgreSQL
# server URL on which a throwaway database is created and dropped; default DATABASE_URL, then
# VERDICT_TEST_POSTGRES; none: the PostgreSQL part is skipped).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PG_SERVER=${BENCH_POSTGRES:-${DATABASE_URL:-${VERDICT_TEST_POSTGRES:-}}}
FOR=${BENCH_SCHEDULES_FOR:-25s}
work=$(mktemp -d /tmp/verdict-schedbench.XXXXXX)
pgdb=
cleanup() {
	[[ -z $pgdb ]] || "$work/loadgen" pgdb drop "$pgdb" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building"
go build -o "$work/schedbench" ./tools/schedbench
go build -o "$work/loadgen" ./tools/loadgen
echo "== load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

echo "== sqlite"
mkdir "$work/sqlite"
"$work/schedbench" -data "$work/sqlite" -for "$FOR"
if [[ -n $PG_SERVER ]]; then
	pgdb=$("$work/loadgen" pgdb create "$PG_SERVER")
	echo "== postgres"
	"$work/schedbench" -db "$pgdb" -for "$FOR"
	"$work/loadgen" pgdb drop "$pgdb"
	pgdb=
else
	echo "== postgres: skipped (set BENCH_POSTGRES, DATABASE_URL or VERDICT_TEST_POSTGRES)"
fi
