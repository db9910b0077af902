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

PW_VERSION=1.65.1
PW_INTEGRITY=sha512-hqPpz7blSMPxWVdoeE1yiBSzXsKiVOd2k+kjCvmUywD2GPO2Dd9HfcWnq9NN0GHbNZDFgZ9JfBFr+X5/BLo0qw==

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/internal/traceviewer/dist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

LOG_PREFIX=update-trace-viewer
# shellcheck source=scripts/lib.sh
source "$root/scripts/lib.sh"

npm_tarball playwright-core "$PW_VERSION" "$PW_INTEGRITY" "$tmp/pw.tgz"
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
