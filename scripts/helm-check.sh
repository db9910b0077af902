#!/usr/bin/env bash
# The Helm chart's stage of the test command: installs helm (pinned) when missing, then lints
# the chart in deploy/helm/verdict, plainly and with --strict, for each value set the chart
# tests render. The rendered objects themselves are checked by the Go tests in deploy/helm
# (package helmtest), which run `helm template` with the helm this script installed.
#
# helm is built with `go install` into a folder OUTSIDE the repository, kept across runs
# (${XDG_CACHE_HOME:-$HOME/.cache}/verdict-tools/helm-<version>/helm; a few minutes the first
# time), and reused from there.
#
# Progress goes to stderr; stdout carries only `export NAME=value` lines, like
# scripts/services.sh, so callers can do
#   vars=$(scripts/helm-check.sh) && eval "$vars" && go test -tags integration -count=1 ./deploy/...
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

HELM_VERSION=v3.22.0
CHART=deploy/helm/verdict

log() { printf 'helm-check: %s\n' "$*" >&2; }
die() {
	printf 'helm-check: FAIL: %s\n' "$*" >&2
	exit 1
}

tools=${XDG_CACHE_HOME:-$HOME/.cache}/verdict-tools
helm_dir=$tools/helm-$HELM_VERSION
helm=$helm_dir/helm

if [[ ! -x $helm ]]; then
	log "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION   (into $helm_dir; takes a few minutes the first time)"
	mkdir -p "$helm_dir" || die "cannot create $helm_dir"
	# Outside the module, so that go.mod is neither read nor changed.
	(cd "$helm_dir" && GOBIN=$helm_dir GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2) ||
		die "could not install helm $HELM_VERSION with go install"
	[[ -x $helm ]] || die "go install succeeded but $helm is missing"
fi
# A helm built by `go install` (without the release's -ldflags) reports only its major.minor
# (v3.22), so the folder's name carries the exact version; this catches a wrong or broken binary.
if ! got=$("$helm" version --template '{{.Version}}' 2>&1); then
	die "$helm does not run: $got (delete $helm_dir to reinstall)"
fi
if [[ $got != "$HELM_VERSION" && $HELM_VERSION != "$got".* ]]; then
	die "$helm is $got, want $HELM_VERSION (delete $helm_dir to reinstall)"
fi
log "helm $got at $helm"

[[ -f $CHART/Chart.yaml ]] || die "no chart at $CHART"

# The value sets the Go tests render; each must lint clean, also with --strict (where a
# warning fails too).
value_sets=(
	"defaults|"
	"replicas|--set replicaCount=3 --set secrets.databaseURL=postgres://verdict@db:5432/verdict --set secrets.redisURL=redis://cache:6379"
	"runner+monitor|--set runner.enabled=true --set metrics.serviceMonitor.enabled=true --set metrics.token=lint-token"
	"ingress+pvc|--set ingress.enabled=true --set persistence.enabled=true"
	"runner-on-kubernetes|--set runner.enabled=true --set runner.backend=kubernetes"
	"runner-on-kubernetes+namespace|--set runner.enabled=true --set runner.backend=kubernetes --set runner.kubernetes.namespace=verdict-runs --set runner.kubernetes.helperImage=registry.example.com/verdict:1.2.3"
	"embedded-on-kubernetes|--set config.runner=embedded --set config.backend=kubernetes"
)
for set in "${value_sets[@]}"; do
	name=${set%%|*}
	read -r -a args <<<"${set#*|}"
	for strict in "" --strict; do
		log "helm lint $strict $CHART   ($name)"
		if ! out=$("$helm" lint $strict "$CHART" ${args[@]+"${args[@]}"} 2>&1); then
			printf '%s\n' "$out" >&2
			die "helm lint $strict $CHART ($name: ${set#*|}) failed (above)"
		fi
	done
done

# A chart that accepts several replicas on SQLite would break the first time it scales.
if out=$("$helm" template verdict "$CHART" --set replicaCount=3 2>&1); then
	die "helm template with replicaCount=3 and no DATABASE_URL/REDIS_URL succeeded; the chart must refuse it"
elif [[ $out != *"needs PostgreSQL and Redis"* ]]; then
	printf '%s\n' "$out" >&2
	die "helm template with replicaCount=3 failed, but not with the chart's message (above)"
fi

printf 'export VERDICT_TEST_HELM=%q\n' "$helm"
