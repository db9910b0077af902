#!/usr/bin/env bash
# Builds Verdict's container image without pulling anything, and checks it on the Docker engine:
# the static binary is built on this host (CGO_ENABLED=0) and copied by the Dockerfile's
# "prebuilt" stage into a scratch image, the same image the Dockerfile's default target builds
# with the Go toolchain image. The check starts a container, waits for GET /healthz, and
# verifies that its process runs as the non-root user 65532; the image's size is printed.
# Then, when docker-compose (or the compose plugin) is installed, `compose.yaml` is validated
# with `config`.
#
#   scripts/image.sh [TAG]      (default TAG: verdict:local)
#
# Non-zero exit on any failure. The test command (scripts/test.sh) runs it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TAG=${1:-verdict:local}
log() { printf 'image: %s\n' "$*" >&2; }
die() {
	printf 'image: FAIL: %s\n' "$*" >&2
	exit 1
}

ctx=$(mktemp -d)
container=
cleanup() {
	[[ -z $container ]] || docker rm -f "$container" >/dev/null 2>&1 || true
	rm -rf "$ctx"
}
trap cleanup EXIT

version=$(git describe --always --dirty 2>/dev/null || echo dev)
log "go build (CGO_ENABLED=0, version $version)"
CGO_ENABLED=0 go build -trimpath -tags timetzdata -ldflags "-s -w -X main.version=$version" -o "$ctx/verdict" ./cmd/verdict
if command -v file >/dev/null && ! file "$ctx/verdict" | grep -q 'statically linked'; then
	die "the binary is not statically linked: $(file "$ctx/verdict")"
fi
[[ -r /etc/ssl/certs/ca-certificates.crt ]] || die "/etc/ssl/certs/ca-certificates.crt missing (apt-get install ca-certificates)"
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
mkdir "$ctx/data"

log "docker build --target prebuilt -t $TAG"
docker build -q --target prebuilt -f Dockerfile -t "$TAG" "$ctx" >/dev/null || die "docker build failed"

size=$(docker image inspect -f '{{.Size}}' "$TAG")
user=$(docker image inspect -f '{{.Config.User}}' "$TAG")
[[ $user == 65532:65532 ]] || die "the image's user is '$user', want 65532:65532"

log "starting a container of $TAG"
container=$(docker run -d -e VERDICT_DEV=true -p 127.0.0.1::8080 "$TAG") || die "docker run failed"
port=$(docker port "$container" 8080/tcp | head -n1 | sed 's/.*://')
[[ -n $port ]] || die "no published port"
ok=
for _ in $(seq 1 60); do
	if body=$(curl -fsS "http://127.0.0.1:$port/healthz" 2>/dev/null) && [[ $body == *'"status":"ok"'* ]]; then
		ok=1
		break
	fi
	if [[ $(docker inspect -f '{{.State.Running}}' "$container") != true ]]; then
		docker logs "$container" >&2 || true
		die "the container exited"
	fi
	sleep 0.5
done
[[ -n $ok ]] || {
	docker logs "$container" >&2 || true
	die "GET /healthz did not answer 200 within 30 s"
}
[[ $body == *"\"version\":\"$version\""* ]] || die "/healthz reports another version: $body"
uid=$(docker top "$container" -o pid,uid | awk 'NR == 2 {print $2}')
[[ $uid == 65532 ]] || die "the server runs as uid '$uid', want 65532"
log "ok: /healthz answers ($body), the server runs as uid $uid"
printf 'image: %s is %s bytes (%s MB)\n' "$TAG" "$size" "$(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1e6}')" >&2

compose=()
if docker compose version >/dev/null 2>&1; then
	compose=(docker compose)
elif command -v docker-compose >/dev/null; then
	compose=(docker-compose)
fi
if ((${#compose[@]} == 0)); then
	die "neither docker compose nor docker-compose is installed (scripts/services.sh installs docker-compose)"
fi
log "${compose[*]} -f compose.yaml config"
POSTGRES_PASSWORD=check JWT_SECRET=check-check-check-check-check-check ENCRYPTION_KEY=$(printf 'ab%.0s' {1..32}) \
	"${compose[@]}" -f compose.yaml config -q || die "compose.yaml does not validate"
log "ok: compose.yaml validates"
