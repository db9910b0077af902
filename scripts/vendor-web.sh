#!/usr/bin/env bash
# Vendors the dashboard's browser libraries into internal/web/static, so that building and
# running Verdict needs no Node.js or npm. Run it to refresh a library after changing its pinned
# version and checksum below; commit what it writes.
#
# Each library is the npm registry's tarball of a pinned version. The tarball must match both
# the SHA-512 `integrity` the registry publishes for that version and the checksum pinned here
# (so a changed registry answer is refused too); only then is the file extracted.
set -euo pipefail

REGISTRY=${NPM_REGISTRY:-https://registry.npmjs.org}
HTMX_VERSION=2.0.11
HTMX_INTEGRITY=sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA==

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/internal/web/static
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

die() {
	printf 'vendor-web: ERROR: %s\n' "$*" >&2
	exit 1
}

# vendor NAME VERSION PINNED_INTEGRITY FILE_IN_PACKAGE DEST
vendor() {
	local name=$1 version=$2 pinned=$3 file=$4 dest=$5
	local meta tarball published actual
	meta=$(curl -fsSL "$REGISTRY/$name/$version") || die "cannot read $name@$version from $REGISTRY"
	tarball=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["tarball"])')
	published=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["integrity"])')
	[ "$published" = "$pinned" ] || die "$name@$version: the registry publishes $published, pinned is $pinned"
	curl -fsSL -o "$tmp/$name.tgz" "$tarball" || die "cannot download $tarball"
	actual="sha512-$(openssl dgst -sha512 -binary "$tmp/$name.tgz" | base64 -w0)"
	[ "$actual" = "$pinned" ] || die "$name@$version: the tarball's checksum is $actual, want $pinned"
	mkdir -p "$tmp/$name"
	tar -xzf "$tmp/$name.tgz" -C "$tmp/$name" "package/$file"
	cp "$tmp/$name/package/$file" "$out/$dest"
	printf 'vendor-web: %s@%s -> internal/web/static/%s\n' "$name" "$version" "$dest" >&2
}

vendor htmx.org "$HTMX_VERSION" "$HTMX_INTEGRITY" dist/htmx.min.js htmx.min.js
