#!/bin/sh
# Verdict's container contract for pytest: $1 is the folder under /app/tests (`all` or empty:
# every folder; an unknown one exits 2); JUnit XML goes to /app/junit/results.xml, which Verdict
# reads. pytest's exit code is the container's.
#
# A sharded run (docs/suites.md): with VERDICT_TESTS_FILE, run the files it lists (JUnit names a
# file by its dotted module, tests.cart.test_cart) plus, of the files in no shard's list
# (VERDICT_ALL_TESTS_FILE: new ones), every SHARD_TOTAL-th from the SHARD_INDEX-th; in a retry
# container (VERDICT_RETRY=1) the list names tests, selected with -k; without a list, every
# SHARD_TOTAL-th file from the SHARD_INDEX-th (pytest has no split of its own).
set -eu
cd /app
folder=${1:-all}
target=tests
[ "$folder" = all ] || target=tests/$folder
if [ ! -d "$target" ]; then
	echo "pytest recipe: no test folder /app/$target" >&2
	exit 2
fi
mkdir -p junit
run() { exec python3 -m pytest -p no:cacheprovider -rA --junitxml=junit/results.xml "$@"; }
# as_paths turns dotted modules into paths relative to /app.
as_paths() { sed 's#\.#/#g; s#$#.py#' "$1"; }

if [ "${VERDICT_RETRY:-}" = 1 ] && [ -n "${VERDICT_TESTS_FILE:-}" ]; then
	run -k "$(awk 'NR>1{printf " or "}{printf "%s",$0}' "$VERDICT_TESTS_FILE")" "$target"
fi
if [ -z "${SHARD_TOTAL:-}" ]; then
	run "$target"
fi
mine=
known=
if [ -n "${VERDICT_TESTS_FILE:-}" ]; then
	mine=$(as_paths "$VERDICT_TESTS_FILE")
	known=$(as_paths "${VERDICT_ALL_TESTS_FILE:-/dev/null}")
fi
i=0
picked=
for f in $(find "$target" -name 'test_*.py' | sort); do
	if printf '%s\n' "$mine" | grep -qxF "$f"; then
		picked="$picked $f"
	elif [ -z "$mine" ] || ! printf '%s\n' "$known" | grep -qxF "$f"; then
		if [ $((i % SHARD_TOTAL)) -eq $((SHARD_INDEX - 1)) ]; then
			picked="$picked $f"
		fi
		i=$((i + 1))
	fi
done
echo "pytest recipe: shard $SHARD_INDEX/$SHARD_TOTAL:$picked"
if [ -z "$picked" ]; then
	echo "pytest recipe: nothing to run in this shard"
	exit 0
fi
# shellcheck disable=SC2086 # one word per file
run $picked
