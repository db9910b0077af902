#!/bin/sh
# Verdict's container contract for Maven Surefire: $1 is a test class pattern (`all` or empty:
# every test). With VERDICT_TESTS_FILE (a sharded run, or a retry with VERDICT_RETRY=1) the list
# names test classes or methods, passed to -Dtest. Reports: /app/target/surefire-reports.
# -Dsurefire.rerunFailingTestsCount=1 would retry in Maven itself (Surefire then records the
# reruns as <flakyFailure>, and the test passes).
set -eu
cd /app
folder=${1:-all}
set -- -B -o test
if [ -n "${VERDICT_TESTS_FILE:-}" ]; then
	set -- "$@" -Dtest="$(sed 's/()$//' "$VERDICT_TESTS_FILE" | paste -sd, -)"
elif [ "$folder" != all ]; then
	set -- "$@" -Dtest="$folder"
fi
exec mvn "$@"
