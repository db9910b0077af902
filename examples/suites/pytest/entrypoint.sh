#!/bin/sh
# Container contract: $1 is the folder under /app/tests (`all` or empty: every folder); the JUnit
# report goes to /app/junit/results.xml. pytest's exit code is the container's.
set -eu
folder=${1:-all}
target=/app/tests
if [ "$folder" != all ]; then
	target=/app/tests/$folder
fi
echo "pytest suite: folder $folder, BASE_URL=${BASE_URL:-}, TASK_ID=${TASK_ID:-}"
mkdir -p /app/junit
exec python3 -m pytest -p no:cacheprovider -v --junitxml=/app/junit/results.xml "$target"
