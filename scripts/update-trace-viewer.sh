#!/usr/bin/env bash
# Vendors Playwright's trace viewer, the trusted web application Verdict serves at /trace/ to
# open a run's traces (internal/traceviewer), from the npm package playwright-core: its
# lib/vite/traceViewer folder, with the package's LICENSE and NOTICE (Apache-2.0). Run this
# after changing the pinned version and checksum below; commit what it writes, so that builds
# and tests need neither Node.js nor the network.
#
# As in scripts/vendor-axe.sh, the npm registry's tarball of the pinned version must match both
# the SHA-512 `integrity` the registry publishes and the checksum pinned here before anything is
# extracted. UI mode's files (uiMode.*) are left out: they drive a local test runner over a
# websocket, which Verdict does not have.
set -euo pipefail

REGISTRY=${NPM_REGISTRY:-https://registry.npmjs.org}
PW_VERSION=1.65.1
PW_INTEGRITY=sha512-hqPpz7blSMPxWVdoeE1yiBSzXsKiVOd2k+kjCvmUywD2GPO2Dd9HfcWnq9NN0GHbNZDFgZ9JfBFr+X5/BLo0qw==

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/internal/traceviewer/dist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

die() {
	printf 'update-trace-viewer: ERROR: %s\n' "$*" >&2
	exit 1
}

meta=$(curl -fsSL "$REGISTRY/playwright-core/$PW_VERSION") || die "cannot read playwright-core@$PW_VERSION from $REGISTRY"
tarball=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["tarball"])')
published=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["integrity"])')
[ "$published" = "$PW_INTEGRITY" ] || die "playwright-core@$PW_VERSION: the registry publishes $published, pinned is $PW_INTEGRITY"
curl -fsSL -o "$tmp/pw.tgz" "$tarball" || die "cannot download $tarball"
actual="sha512-$(openssl dgst -sha512 -binary "$tmp/pw.tgz" | base64 -w0)"
[ "$actual" = "$PW_INTEGRITY" ] || die "playwright-core@$PW_VERSION: the tarball's checksum is $actual, want $PW_INTEGRITY"
tar -xzf "$tmp/pw.tgz" -C "$tmp" package/lib/vite/traceViewer package/LICENSE package/NOTICE
[ -f "$tmp/package/lib/vite/traceViewer/index.html" ] && [ -f "$tmp/package/lib/vite/traceViewer/sw.bundle.js" ] ||
	die "playwright-core@$PW_VERSION has no trace viewer at lib/vite/traceViewer"
rm -rf "$out"
mkdir -p "$out"
cp -R "$tmp/package/lib/vite/traceViewer/." "$out/"
rm -f "$out"/uiMode.*
# The files keep the package's 1985 timestamps; permissions are the repository's.
find "$out" -type d -exec chmod 755 {} + && find "$out" -type f -exec chmod 644 {} +
cp "$tmp/package/LICENSE" "$root/internal/traceviewer/LICENSE"
cp "$tmp/package/NOTICE" "$root/internal/traceviewer/NOTICE"
printf '%s\n' "$PW_VERSION" >"$root/internal/traceviewer/VERSION"
printf 'update-trace-viewer: playwright-core@%s -> internal/traceviewer/dist (%s)\n' "$PW_VERSION" "$(du -sh "$out" | cut -f1)" >&2
