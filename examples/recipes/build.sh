#!/usr/bin/env bash
# Builds the recipes that can be built on a machine without a container registry:
# verdict-recipes/{playwright,pytest,junit5}:latest, each FROM a plain Debian bookworm
# (verdict-base/debian:bookworm, made with debootstrap as the sample suites' base is, since
# debian:bookworm-slim cannot be pulled here) with the framework installed by `apt-get install` in
# its Dockerfile, as on any machine. Playwright's node_modules comes from `npm ci` on this host
# (the image has no npm).
#
# Cached like examples/suites/build.sh: an image whose source-hash label matches its sources is
# left alone, so running this again costs a few docker image inspect calls. VERDICT_RECIPES=0
# skips everything (the recipes' tests then fail).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
label=dev.verdict.example.source-hash
# shellcheck source=examples/lib.sh
source "$here/../lib.sh"

[[ ${VERDICT_RECIPES:-1} != 0 ]] || exit 0
command -v docker >/dev/null || die "docker CLI not found (run scripts/services.sh)"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (run scripts/services.sh)"

base=verdict-base/debian:bookworm
debian_base "$base" debian-bookworm security --variant=minbase bookworm

# recipe NAME builds verdict-recipes/NAME:latest from the folder NAME, copied into a temporary
# build context so that nothing is written into the repository (node_modules included).
recipe() {
	local name=$1 image=verdict-recipes/$1:latest hash ctx
	hash=$(
		cd "$here/$name"
		{
			echo "$base_hash"
			sha256sum "$here/build.sh" "$here/../lib.sh" | cut -d' ' -f1
			find . -type f -not -path './node_modules/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
		} | sha256sum | cut -c1-16
	)
	if [[ $(label_of "$image") == "$hash" ]]; then
		echo "build.sh: $image is up to date"
		return
	fi
	echo "build.sh: building $image"
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"' EXIT
	cp -R "$here/$name/." "$ctx/"
	rm -rf "$ctx/node_modules"
	if [[ -f $ctx/package-lock.json ]]; then
		command -v npm >/dev/null || die "npm is needed to build $image (its node_modules is installed here, then copied in)"
		# Playwright's browser is Debian's Chromium in the image: nothing to download.
		(cd "$ctx" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
			die "npm ci for $image failed"
	fi
	docker_build "$image" "$hash" "$ctx" --build-arg "BASE=$base" --label "dev.verdict.recipe=$name"
	echo "build.sh: built $image ($(docker image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# The images are built at once: most of a cold build is apt-get downloading and unpacking, which
# overlap well. Each build runs in a subshell of its own; any failure fails the script.
pids=()
for name in ${VERDICT_RECIPES_ONLY:-playwright pytest junit5}; do
	recipe "$name" &
	pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
	wait "$pid" || failed=1
done
((failed == 0)) || die "a recipe image could not be built (above)"
