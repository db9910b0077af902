#!/usr/bin/env bash
# The project's test command: starts the real services, builds the sample suite images, then
# vets and tests every package against them. Non-zero exit on any failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

vars=$(scripts/services.sh)
eval "$vars"

# The docker backend's tests run these images; build.sh skips images that are up to date.
if [[ -x examples/suites/build.sh ]]; then
	examples/suites/build.sh
fi

echo "+ go vet ./..."
go vet ./...
echo "+ go test -p 2 -count=1 -timeout 20m ./..."
go test -p 2 -count=1 -timeout 20m ./...
