#!/usr/bin/env bash
# Builds the sample suite images: verdict-examples/<mode>:latest from examples/suites/suite, and
# verdict-examples/pytest:latest, a real pytest suite on a Debian base made with debootstrap.
# Cached: an image whose source-hash label matches its sources is left alone, so running this
# again costs a few docker image inspect calls; the Debian root filesystem is cached as a tar
# under $VERDICT_CACHE_DIR (default ~/.cache/verdict). VERDICT_EXAMPLES_PYTEST=0 skips pytest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
modes=(pass fail flaky slow sharded)
label=dev.verdict.example.source-hash

# shellcheck source=examples/lib.sh
source "$here/../lib.sh"

command -v docker >/dev/null || die "docker CLI not found (run scripts/services.sh)"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (run scripts/services.sh)"

# The hash covers everything that goes into an image, the Go toolchain included.
hash=$(
	cd "$here"
	{
		go version
		find suite tests Dockerfile build.sh ../lib.sh -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
	} | sha256sum | cut -c1-16
)

ctx=
cleanup() { [[ -z $ctx ]] || rm -rf "$ctx"; }
trap cleanup EXIT

for m in "${modes[@]}"; do
	image=verdict-examples/$m:latest
	if [[ $(label_of "$image") == "$hash" ]]; then
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
	docker_build "$image" "$hash" "$ctx" --label "dev.verdict.example=$m"
done

[[ ${VERDICT_EXAMPLES_PYTEST:-1} != 0 ]] || exit 0

# --- pytest on Debian ----------------------------------------------------------------------------
# No registry is reachable, so the base image is a debootstrapped Debian imported into the engine.
base=verdict-base/debian-pytest:latest
debian_base "$base" debian-pytest "" --variant=minbase "--include=python3,python3-pytest" bookworm

image=verdict-examples/pytest:latest
pytest_hash=$(
	cd "$here/pytest"
	{
		echo "$base_hash"
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
	} | sha256sum | cut -c1-16
)
if [[ $(label_of "$image") == "$pytest_hash" ]]; then
	echo "build.sh: $image is up to date"
else
	echo "build.sh: building $image"
	docker_build "$image" "$pytest_hash" "$here/pytest" --label dev.verdict.example=pytest
fi
