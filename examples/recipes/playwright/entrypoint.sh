#!/bin/sh
# Verdict's container contract for Playwright: $1 is the folder under /app/tests (`all` or
# empty: every folder; an unknown one exits 2). Playwright's exit code is the container's.
# Reports land where playwright.config.ts puts them: /app/playwright-report (HTML),
# /app/results/results.json and /app/results/junit.xml, /app/test-results (traces, screenshots).
#
# A sharded run (docs/suites.md): with VERDICT_TESTS_FILE, run the spec files it lists plus,
# of the spec files in no shard's list (VERDICT_ALL_TESTS_FILE: new ones), every SHARD_TOTAL-th
# from the SHARD_INDEX-th; in a retry container (VERDICT_RETRY=1) the list names tests, picked
# with --grep; without a list, Playwright's own --shard=SHARD_INDEX/SHARD_TOTAL.
set -eu
cd /app
folder=${1:-all}
target=tests
[ "$folder" = all ] || target=tests/$folder
if [ ! -d "$target" ]; then
	echo "playwright recipe: no test folder /app/$target" >&2
	exit 2
fi
echo "playwright recipe: folder $folder, BASE_URL=${BASE_URL:-}, Chromium $(/usr/bin/chromium --version 2>/dev/null || echo '?')"
run() { exec node_modules/.bin/playwright test "$@"; }

if [ "${VERDICT_RETRY:-}" = 1 ] && [ -n "${VERDICT_TESTS_FILE:-}" ]; then
	# Titles, as regular expressions: escape their special characters, then one alternation.
	grep=$(sed 's/[][\\^$.|?*+(){}/]/\\&/g' "$VERDICT_TESTS_FILE" | paste -sd'|' -)
	echo "playwright recipe: retry of $(wc -l <"$VERDICT_TESTS_FILE") failed test(s)"
	run --grep "$grep" "$target"
fi
if [ -z "${SHARD_TOTAL:-}" ]; then
	run "$target"
fi
if [ -z "${VERDICT_TESTS_FILE:-}" ]; then
	run --shard="$SHARD_INDEX/$SHARD_TOTAL" "$target"
fi
# Verdict's list names spec files as the JSON report does: relative to tests/.
i=0
picked=
for f in $(find "$target" -name '*.spec.ts' | sed 's#^tests/##' | sort); do
	if grep -qxF "$f" "$VERDICT_TESTS_FILE"; then
		picked="$picked tests/$f"
	elif ! grep -qxF "$f" "${VERDICT_ALL_TESTS_FILE:-/dev/null}"; then
		if [ $((i % SHARD_TOTAL)) -eq $((SHARD_INDEX - 1)) ]; then
			picked="$picked tests/$f"
		fi
		i=$((i + 1))
	fi
done
echo "playwright recipe: shard $SHARD_INDEX/$SHARD_TOTAL:$picked"
if [ -z "$picked" ]; then
	echo "playwright recipe: nothing to run in this shard"
	exit 0
fi
# shellcheck disable=SC2086 # one word per file
run $picked
