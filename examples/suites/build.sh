#!/usr/bin/env bash
# Builds the sample suite images verdict-examples/<mode>:latest from examples/suites/suite.
# Cached: an image whose source-hash label matches the current sources is left alone, so running
# this again costs a few docker image inspect calls.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
modes=(pass fail flaky slow)
label=dev.verdict.example.source-hash

command -v docker >/dev/null || { echo "build.sh: docker CLI not found (run scripts/services.sh)" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "build.sh: the Docker engine does not answer (run scripts/services.sh)" >&2; exit 1; }

# The hash covers everything that goes into an image, the Go toolchain included.
hash=$(
	cd "$here"
	{
		go version
		find suite tests Dockerfile build.sh -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
	} | sha256sum | cut -c1-16
)

ctx=
cleanup() { [[ -z $ctx ]] || rm -rf "$ctx"; }
trap cleanup EXIT

for m in "${modes[@]}"; do
	image=verdict-examples/$m:latest
	have=$(docker image inspect --format "{{ index .Config.Labels \"$label\" }}" "$image" 2>/dev/null || true)
	if [[ $have == "$hash" ]]; then
		echo "build.sh: $image is up to date"
		continue
	fi
	echo "build.sh: building $image"
	cleanup
	ctx=$(mktemp -d)
	mkdir -p "$ctx/rootfs/app"
	CGO_ENABLED=0 go build -C "$repo" -trimpath -ldflags "-s -w -X main.mode=$m" \
		-o "$ctx/rootfs/usr/local/bin/suite" ./examples/suites/suite
	cp -R "$here/tests" "$ctx/rootfs/app/tests"
	cp "$here/Dockerfile" "$ctx/Dockerfile"
	old=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
	# The classic builder: the engine may be old and no buildx plugin is assumed. Its deprecation
	# notice is noise, so its output is shown only when it fails.
	if ! out=$(DOCKER_BUILDKIT=0 docker build --quiet --label "$label=$hash" --label "dev.verdict.example=$m" \
		--tag "$image" "$ctx" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "build.sh: building $image failed" >&2
		exit 1
	fi
	# Drop the superseded image; one still used by a container stays.
	if [[ -n $old && $old != "$(docker image inspect --format '{{.Id}}' "$image")" ]]; then
		docker image rm "$old" >/dev/null 2>&1 || true
	fi
done
