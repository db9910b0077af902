#!/usr/bin/env bash
# The project's test command: checks formatting, the module files and static analysis (gofmt,
# go mod tidy, go vet, staticcheck), then starts the real services, builds the sample suite
# images, and tests every package against them; then puts the real service through real faults
# (scripts/chaos.sh). Non-zero exit on any failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# staticcheck, pinned: a release that knows this Go version. Installed with `go install` into
# GOPATH/bin when missing or of another version, and reused from there (like stripe-mock in
# scripts/services.sh).
STATICCHECK_VERSION=v0.8.2

static_failed=

# step announces a stage with the time since the start, so that a slow stage shows in CI's log.
step() { printf '+ [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

step "gofmt -l"
# Every Go file of the work tree that git does not ignore (tracked or new, and still there).
gofiles=()
while IFS= read -r f; do
	[[ -f $f ]] && gofiles+=("$f")
done < <(git ls-files --cached --others --exclude-standard -- '*.go')
if ((${#gofiles[@]} == 0)); then
	echo "test.sh: FAIL: no Go files found (is this a git checkout?)" >&2
	static_failed=1
elif ! unformatted=$(gofmt -l "${gofiles[@]}"); then
	echo "test.sh: FAIL: gofmt could not parse some files (above)" >&2
	static_failed=1
elif [[ -n $unformatted ]]; then
	printf 'test.sh: FAIL: these files are not gofmt-formatted (fix with: gofmt -w FILE):\n%s\n' "$unformatted" >&2
	static_failed=1
fi

step "go mod tidy -diff"
# Changes nothing: exits non-zero with a diff when go.mod or go.sum is not what `go mod tidy`
# would write (a missing or unused requirement, a missing checksum).
if ! tidy_diff=$(go mod tidy -diff 2>&1); then
	printf 'test.sh: FAIL: go.mod/go.sum are not tidy (fix with: go mod tidy); what tidy would change:\n%s\n' \
		"$(grep -v '^go: downloading ' <<<"$tidy_diff")" >&2
	static_failed=1
fi

# The end-to-end packages (internal/app, cmd/verdict/e2e, deploy/helm) are built with the
# integration tag alone, so that the fast tier (go test -short ./...) does not link them: each
# of their tests needs the services, and internal/app's test binary alone takes a quarter of
# the fast tier's time to link. Every check here names the tag, so that nothing goes unchecked.
step "go vet -tags integration ./..."
if ! go vet -tags integration ./...; then
	echo "test.sh: FAIL: go vet found problems (above)" >&2
	static_failed=1
fi

gobin=$(go env GOBIN)
staticcheck=${gobin:-$(go env GOPATH)/bin}/staticcheck
if [[ ! -x $staticcheck ]] || [[ $("$staticcheck" -version 2>/dev/null) != *"(${STATICCHECK_VERSION#v})"* ]]; then
	step "go install honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
	GOFLAGS=-mod=mod go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" ||
		{ echo "test.sh: FAIL: could not install staticcheck $STATICCHECK_VERSION" >&2; exit 1; }
fi
step "staticcheck -tags integration ./...   ($("$staticcheck" -version))"
if ! "$staticcheck" -tags integration ./...; then
	echo "test.sh: FAIL: staticcheck found problems (above); fix them, or justify an exception with a //lint:ignore comment" >&2
	static_failed=1
fi

if [[ -n $static_failed ]]; then
	echo "test.sh: static checks failed; not running the tests" >&2
	exit 1
fi

# The Helm chart (deploy/helm/verdict): installs helm (pinned, cached outside the repository),
# lints the chart, and exports VERDICT_TEST_HELM for the chart's Go tests (deploy/helm), which
# fail without it.
step "scripts/helm-check.sh"
helm_vars=$(scripts/helm-check.sh) ||
	{ echo "test.sh: FAIL: the Helm chart's checks failed (above)" >&2; exit 1; }
eval "$helm_vars"

step "scripts/services.sh"
vars=$(scripts/services.sh)
eval "$vars"

# The docker backend's tests run these images; build.sh skips images that are up to date.
if [[ -x examples/suites/build.sh ]]; then
	step "examples/suites/build.sh"
	examples/suites/build.sh
fi
# The recipes (examples/recipes: Playwright with Debian's Chromium, pytest, JUnit 5), run on the
# engine by internal/app's recipe tests; cached like the sample images. A cold build takes
# minutes, mostly apt-get downloading, so it goes on in the background while Verdict's image and
# the Kubernetes cluster are made, and the Go tests wait for it; a warm one takes seconds.
step "examples/recipes/build.sh &"
recipes_log=$(mktemp)
examples/recipes/build.sh >"$recipes_log" 2>&1 &
recipes_pid=$!
trap 'kill "$recipes_pid" 2>/dev/null || true; rm -f "$recipes_log"' EXIT

# Verdict's own image, built from a host binary (no registry is needed) and started on the
# engine; compose.yaml validated.
step "scripts/image.sh"
scripts/image.sh

# A single-node Kubernetes cluster for the Kubernetes backend's tests, and the images its runs
# use loaded into its node (no registry is in reach): the sample suites and the helper image,
# verdict:local, just built from this tree.
step "scripts/kube-cluster.sh"
kube_vars=$(scripts/kube-cluster.sh) ||
	{ echo "test.sh: FAIL: the Kubernetes test cluster could not be started (above)" >&2; exit 1; }
eval "$kube_vars"
step "docker save verdict:local verdict-examples/{pass,fail,slow,sharded} | ctr images import"
# shellcheck disable=SC2086 # VERDICT_TEST_KUBE_CTR is a command with its arguments
docker save verdict:local verdict-examples/pass:latest verdict-examples/fail:latest verdict-examples/slow:latest verdict-examples/sharded:latest |
	$VERDICT_TEST_KUBE_CTR images import - >/dev/null ||
	{ echo "test.sh: FAIL: could not load the images into the test cluster's node" >&2; exit 1; }

step "wait for examples/recipes/build.sh"
if ! wait "$recipes_pid"; then
	cat "$recipes_log" >&2
	echo "test.sh: FAIL: the recipe images could not be built (above)" >&2
	exit 1
fi
cat "$recipes_log"

# internal/app, the end-to-end package, is the longest binary (the recipes' real Playwright,
# pytest and JUnit runs, the erasure on both databases and MinIO, the browsers): 20 minutes
# were no longer enough for it on this machine.
step "go test -tags integration -p 2 -count=1 -timeout 40m ./..."
go test -tags integration -p 2 -count=1 -timeout 40m ./...

# The real service through real faults: PostgreSQL, Redis and the Docker engine stopped or
# restarted, the remote runner frozen, a replica killed, the data folder full. After the Go
# tests, because it restarts the Docker engine they use.
step "scripts/chaos.sh"
scripts/chaos.sh ||
	{ echo "test.sh: FAIL: the chaos stage failed (what failed is in its summary table above)" >&2; exit 1; }
step "done"
