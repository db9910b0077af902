#!/usr/bin/env bash
# Vendors axe-core, the accessibility checker the browser tests (internal/app/browser_test.go)
# inject into each page, into internal/app/testdata/axe-core. It is for tests only: the product
# does not embed or serve it. Run this after changing the pinned version and checksum below;
# commit what it writes, so the tests need neither Node.js nor the network.
#
# As in scripts/vendor-web.sh, the npm registry's tarball of the pinned version must match both
# the SHA-512 `integrity` the registry publishes and the checksum pinned here before anything is
# extracted.
set -euo pipefail

AXE_VERSION=4.10.3
AXE_INTEGRITY=sha512-Xm7bpRXnDSX2YE2YFfBk2FnF0ep6tmG7xPh8iHee8MIcrgq762Nkce856dYtJYLkuIoYZvGfTs/PbZhideTcEg==

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/internal/app/testdata/axe-core
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

LOG_PREFIX=vendor-axe
# shellcheck source=scripts/lib.sh
source "$root/scripts/lib.sh"

npm_tarball axe-core "$AXE_VERSION" "$AXE_INTEGRITY" "$tmp/axe.tgz"
tar -xzf "$tmp/axe.tgz" -C "$tmp" package/axe.min.js package/LICENSE
mkdir -p "$out"
cp "$tmp/package/axe.min.js" "$out/axe.min.js"
cp "$tmp/package/LICENSE" "$out/LICENSE"
printf '%s\n' "$AXE_VERSION" >"$out/VERSION"
printf 'vendor-axe: axe-core@%s -> internal/app/testdata/axe-core/axe.min.js\n' "$AXE_VERSION" >&2
