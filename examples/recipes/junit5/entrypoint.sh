#!/bin/sh
# Verdict's container contract for JUnit 5: $1 is a package to run (`all` or empty: every test
# class); the console launcher's XML goes to /app/junit (TEST-junit-jupiter.xml), which Verdict
# reads. The launcher's exit code is the container's (1 when a test failed).
#
# A sharded run (docs/suites.md): VERDICT_TESTS_FILE lists test classes (the results' suites),
# run with --select-class; in a retry container (VERDICT_RETRY=1) it lists test methods
# ("name()"), run with --select-method once their class is found in the sources; without a list,
# every test class of the folder runs in the first shard only (split by class with
# --select-class to spread a larger suite).
set -eu
cd /app
folder=${1:-all}
# What to run: the lists of a sharded run or a retry first, else the folder.
set --
if [ "${VERDICT_RETRY:-}" = 1 ] && [ -n "${VERDICT_TESTS_FILE:-}" ]; then
	for m in $(sed 's/(.*//' "$VERDICT_TESTS_FILE"); do
		for f in $(grep -rlE "void $m\(" src/test/java); do
			c=$(echo "${f#src/test/java/}" | sed 's#\.java$##; s#/#.#g')
			set -- "$@" --select-method "$c#$m"
		done
	done
elif [ -n "${VERDICT_TESTS_FILE:-}" ]; then
	for c in $(cat "$VERDICT_TESTS_FILE"); do
		set -- "$@" --select-class "$c"
	done
elif [ "${SHARD_INDEX:-1}" != 1 ]; then
	echo "junit5 recipe: shard $SHARD_INDEX/$SHARD_TOTAL has nothing to run without Verdict's list"
	exit 0
elif [ "$folder" = all ]; then
	set -- --scan-class-path
else
	set -- --select-package "$folder"
fi
exec java -jar /usr/share/java/junit-platform-console-standalone.jar \
	--class-path classes --reports-dir /app/junit --details tree --disable-banner "$@"
