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

die() {
	echo "build.sh: $*" >&2
	exit 1
}
command -v docker >/dev/null || die "docker CLI not found (run scripts/services.sh)"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (run scripts/services.sh)"

# label_of IMAGE prints the image's source-hash label, empty when the image is absent.
label_of() { docker image inspect --format "{{ index .Config.Labels \"$label\" }}" "$1" 2>/dev/null || true; }

# docker_build IMAGE HASH CONTEXT [build flags...] builds with the classic builder: the engine may
# be old and no buildx plugin is assumed. Its deprecation notice is noise, so its output is shown
# only on failure. The superseded image is dropped (one still used by a container stays).
docker_build() {
	local image=$1 hash=$2 context=$3 out old
	shift 3
	old=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
	if ! out=$(DOCKER_BUILDKIT=0 docker build --quiet --label "$label=$hash" "$@" --tag "$image" "$context" 2>&1); then
		printf '%s\n' "$out" >&2
		die "building $image failed"
	fi
	if [[ -n $old && $old != "$(docker image inspect --format '{{.Id}}' "$image")" ]]; then
		docker image rm "$old" >/dev/null 2>&1 || true
	fi
}

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
debootstrap_args=(--variant=minbase "--include=python3,python3-pytest" bookworm)
base_hash=$(printf '%s\n' "${debootstrap_args[*]}" "trim v1" | sha256sum | cut -c1-16)
cache=${VERDICT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/verdict}
rootfs_tar=$cache/debian-pytest-$base_hash.tar

if [[ $(label_of "$base") == "$base_hash" ]]; then
	echo "build.sh: $base is up to date"
else
	if [[ ! -s $rootfs_tar ]]; then
		if ! command -v debootstrap >/dev/null; then
			echo "build.sh: installing debootstrap"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 ||
				{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; } >&2 ||
				die "debootstrap is missing and could not be installed"
		fi
		echo "build.sh: debootstrap ${debootstrap_args[*]} (a minute or two; cached in $cache)"
		cleanup
		ctx=$(mktemp -d)
		# DEBOOTSTRAP_MIRROR, when set, names a Debian mirror; debootstrap's default otherwise.
		if ! debootstrap "${debootstrap_args[@]}" "$ctx/rootfs" ${DEBOOTSTRAP_MIRROR:+"$DEBOOTSTRAP_MIRROR"} >"$ctx/debootstrap.log" 2>&1; then
			tail -n 20 "$ctx/debootstrap.log" >&2
			die "debootstrap failed"
		fi
		# Package caches, docs and translations are a third of the size and no use to a suite.
		rm -rf "$ctx/rootfs"/var/cache/apt/archives/*.deb "$ctx/rootfs"/var/lib/apt/lists/* \
			"$ctx/rootfs"/usr/share/{doc,man,info,locale}
		mkdir -p "$cache"
		tar -C "$ctx/rootfs" --numeric-owner -cf "$rootfs_tar.tmp" .
		mv "$rootfs_tar.tmp" "$rootfs_tar"
	fi
	echo "build.sh: importing $base"
	docker import --change "LABEL $label=$base_hash" --change 'CMD ["/bin/bash"]' "$rootfs_tar" "$base" >/dev/null
fi

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
