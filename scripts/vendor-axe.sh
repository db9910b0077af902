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

REGISTRY=${NPM_REGISTRY:-https://registry.npmjs.org}
AXE_VERSION=4.10.3
AXE_INTEGRITY=sha512-Xm7bpRXnDSX2YE2YFfBk2FnF0ep6tmG7xPh8iHee8MIcrgq762Nkce856dYtJYLkuIoYZvGfTs/PbZhideTcEg==

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/internal/app/testdata/axe-core
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

die() {
	printf 'vendor-axe: ERROR: %s\n' "$*" >&2
	exit 1
}

meta=$(curl -fsSL "$REGISTRY/axe-core/$AXE_VERSION") || die "cannot read axe-core@$AXE_VERSION from $REGISTRY"
tarball=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["tarball"])')
published=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["integrity"])')
[ "$published" = "$AXE_INTEGRITY" ] || die "axe-core@$AXE_VERSION: the registry publishes $published, pinned is $AXE_INTEGRITY"
curl -fsSL -o "$tmp/axe.tgz" "$tarball" || die "cannot download $tarball"
actual="sha512-$(openssl dgst -sha512 -binary "$tmp/axe.tgz" | base64 -w0)"
[ "$actual" = "$AXE_INTEGRITY" ] || die "axe-core@$AXE_VERSION: the tarball's checksum is $actual, want $AXE_INTEGRITY"
tar -xzf "$tmp/axe.tgz" -C "$tmp" package/axe.min.js package/LICENSE
mkdir -p "$out"
cp "$tmp/package/axe.min.js" "$out/axe.min.js"
cp "$tmp/package/LICENSE" "$out/LICENSE"
printf '%s\n' "$AXE_VERSION" >"$out/VERSION"
printf 'vendor-axe: axe-core@%s -> internal/app/testdata/axe-core/axe.min.js\n' "$AXE_VERSION" >&2
