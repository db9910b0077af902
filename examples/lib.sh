# Shell functions shared by the example image builds (examples/suites/build.sh,
# examples/recipes/build.sh); sourced, not run. The caller sets `label`, the image label that
# holds an image's source hash.
#
# No registry can be pulled from here, so a Debian base image is made with debootstrap and
# imported into the engine (debian_base); its root filesystem is cached as a tar under
# $VERDICT_CACHE_DIR (default ~/.cache/verdict), so a fresh engine costs an import, not a
# debootstrap.

die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

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

# debian_base IMAGE NAME SOURCES DEBOOTSTRAP_ARGS... makes IMAGE (a Debian root filesystem imported
# into the engine, cached as NAME-<hash>.tar) unless its label says it is up to date; it sets
# base_hash to the image's hash. SOURCES is "" to keep the one suite debootstrap used in /etc/apt/sources.list, or
# "security" to list the suite's updates and security suites too, as Debian's own images do, so
# that `apt-get install` in a Dockerfile FROM it gets the fixed packages.
debian_base() {
	local image=$1 name=$2 sources=$3 cache rootfs_tar tmp
	shift 3
	# The hash of the pytest base predates SOURCES: it stays the same when SOURCES is empty, so
	# its cached root filesystem stays valid.
	base_hash=$(printf '%s\n' "$*" "trim v1" ${sources:+"sources $sources"} | sha256sum | cut -c1-16)
	cache=${VERDICT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/verdict}
	rootfs_tar=$cache/$name-$base_hash.tar
	if [[ $(label_of "$image") == "$base_hash" ]]; then
		echo "${0##*/}: $image is up to date"
		return
	fi
	if [[ ! -s $rootfs_tar ]]; then
		if ! command -v debootstrap >/dev/null; then
			echo "${0##*/}: installing debootstrap"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 ||
				{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; } >&2 ||
				die "debootstrap is missing and could not be installed"
		fi
		echo "${0##*/}: debootstrap $* (a minute or two; cached in $cache)"
		tmp=$(mktemp -d)
		# DEBOOTSTRAP_MIRROR, when set, names a Debian mirror; debootstrap's default otherwise.
		if ! debootstrap "$@" "$tmp/rootfs" ${DEBOOTSTRAP_MIRROR:+"$DEBOOTSTRAP_MIRROR"} >"$tmp/debootstrap.log" 2>&1; then
			tail -n 20 "$tmp/debootstrap.log" >&2
			rm -rf "$tmp"
			die "debootstrap failed"
		fi
		if [[ $sources == security ]]; then
			local suite=${*: -1} mirror=${DEBOOTSTRAP_MIRROR:-http://deb.debian.org/debian}
			printf '%s\n' "deb $mirror $suite main" "deb $mirror $suite-updates main" \
				"deb ${mirror%/debian}/debian-security $suite-security main" >"$tmp/rootfs/etc/apt/sources.list"
		fi
		# Package caches, docs and translations are a third of the size and no use to a suite.
		rm -rf "$tmp/rootfs"/var/cache/apt/archives/*.deb "$tmp/rootfs"/var/lib/apt/lists/* \
			"$tmp/rootfs"/usr/share/{doc,man,info,locale}
		mkdir -p "$cache"
		tar -C "$tmp/rootfs" --numeric-owner -cf "$rootfs_tar.tmp" .
		mv "$rootfs_tar.tmp" "$rootfs_tar"
		rm -rf "$tmp"
	fi
	echo "${0##*/}: importing $image"
	docker import --change "LABEL $label=$base_hash" --change 'CMD ["/bin/bash"]' "$rootfs_tar" "$image" >/dev/null
}
