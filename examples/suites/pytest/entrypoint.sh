#!/bin/sh
# Container contract: $1 is the folder under /app/tests (`all` or empty: every folder); the JUnit
# report goes to /app/junit/results.xml. pytest's exit code is the container's.
#
# A sharded run (docs/suites.md): with VERDICT_TESTS_FILE, run the files it lists (JUnit names
# a file by its dotted module, tests.api.test_contract) and, of the files in no shard's list
# (VERDICT_ALL_TESTS_FILE: new ones), every SHARD_TOTAL-th from the SHARD_INDEX-th; in a retry
# container (VERDICT_RETRY=1) the list names tests, selected with -k; without a list, every
# SHARD_TOTAL-th file from the SHARD_INDEX-th (pytest has no split of its own).
set -eu
folder=${1:-all}
target=/app/tests
if [ "$folder" != all ]; then
	target=/app/tests/$folder
fi
echo "pytest suite: folder $folder, BASE_URL=${BASE_URL:-}, TASK_ID=${TASK_ID:-}"
mkdir -p /app/junit
run() { exec python3 -m pytest -p no:cacheprovider -v --junitxml=/app/junit/results.xml "$@"; }
# as_paths turns a list of dotted modules into paths under /app.
as_paths() { sed 's#\.#/#g; s#^#/app/#; s#$#.py#' "$1"; }

if [ -z "${SHARD_TOTAL:-}" ]; then
	run "$target"
fi
if [ "${VERDICT_RETRY:-}" = 1 ]; then
	echo "pytest suite: retry of $(wc -l <"$VERDICT_TESTS_FILE") failed test(s)"
	run -k "$(awk 'NR>1{printf " or "}{printf "%s",$0}' "$VERDICT_TESTS_FILE")" "$target"
fi
known=
[ -z "${VERDICT_ALL_TESTS_FILE:-}" ] || known=$(as_paths "$VERDICT_ALL_TESTS_FILE")
mine=
[ -z "${VERDICT_TESTS_FILE:-}" ] || mine=$(as_paths "$VERDICT_TESTS_FILE")
i=0
picked=
for f in $(find "$target" -name 'test_*.py' | sort); do
	if [ -n "$mine" ] && printf '%s\n' "$known" | grep -qxF "$f"; then
		continue # assigned to a shard by Verdict
	fi
	if [ $((i % SHARD_TOTAL)) -eq $((SHARD_INDEX - 1)) ]; then
		picked="$picked $f"
	fi
	i=$((i + 1))
done
for f in $mine; do
	[ ! -f "$f" ] || picked="$picked $f"
done
echo "pytest suite: shard $SHARD_INDEX/$SHARD_TOTAL:$picked"
if [ -z "$picked" ]; then
	echo "pytest suite: nothing to run in this shard"
	exit 0
fi
# shellcheck disable=SC2086 # one word per file
run $picked
