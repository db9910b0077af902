#!/bin/sh
# Verdict's container contract for Gradle: $1 is a test filter (`all` or empty: every test).
# With VERDICT_TESTS_FILE (a sharded run, or a retry with VERDICT_RETRY=1) each listed class or
# method becomes a --tests filter. Reports: /app/build/test-results/test/TEST-*.xml.
set -eu
cd /app
folder=${1:-all}
set -- --no-daemon --offline test
if [ -n "${VERDICT_TESTS_FILE:-}" ]; then
	for t in $(sed 's/()$//' "$VERDICT_TESTS_FILE"); do
		set -- "$@" --tests "$t"
	done
elif [ "$folder" != all ]; then
	set -- "$@" --tests "$folder"
fi
exec ./gradlew "$@"
