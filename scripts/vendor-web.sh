#!/usr/bin/env bash
# Vendors the dashboard's browser libraries into internal/web/static, so that building and
# running Verdict needs no Node.js or npm. Run it to refresh a library after changing its pinned
# version and checksum below; commit what it writes.
#
# Each library is the npm registry's tarball of a pinned version. The tarball must match both
# the SHA-512 `integrity` the registry publishes for that version and the checksum pinned here
# (so a changed registry answer is refused too); only then is the file extracted.
set -euo pipefail

HTMX_VERSION=2.0.11
HTMX_INTEGRITY=sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA==

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/internal/web/static
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

LOG_PREFIX=vendor-web
# shellcheck source=scripts/lib.sh
source "$root/scripts/lib.sh"

# vendor NAME VERSION PINNED_INTEGRITY FILE_IN_PACKAGE DEST
vendor() {
	local name=$1 version=$2 pinned=$3 file=$4 dest=$5
	npm_tarball "$name" "$version" "$pinned" "$tmp/$name.tgz"
	mkdir -p "$tmp/$name"
	tar -xzf "$tmp/$name.tgz" -C "$tmp/$name" "package/$file"
	cp "$tmp/$name/package/$file" "$out/$dest"
	printf 'vendor-web: %s@%s -> internal/web/static/%s\n' "$name" "$version" "$dest" >&2
}

vendor htmx.org "$HTMX_VERSION" "$HTMX_INTEGRITY" dist/htmx.min.js htmx.min.js
