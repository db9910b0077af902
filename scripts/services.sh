#!/usr/bin/env bash
# Makes sure the real services the tests use are installed and running on this Debian machine:
# the Docker engine, PostgreSQL, Redis, stripe-mock, MinIO (S3-compatible object storage for the
# report store), Chromium (for the browser tests) and qemu-user (to run machine code of another
# architecture). Idempotent: a service that already answers is reused,
# whoever started it. Missing software is installed from Debian packages with apt-get.
#
# Progress goes to stderr; stdout carries only `export NAME=value` lines, so callers can do
#   vars=$(scripts/services.sh) && eval "$vars"
# The addresses match internal/testenv/testenv.go.
set -euo pipefail

STATE=${VERDICT_TEST_STATE:-/tmp/verdict-test}
PG_PORT=${VERDICT_TEST_PG_PORT:-55432}
REDIS_PORT=${VERDICT_TEST_REDIS_PORT:-56379}
STRIPE_MOCK_PORT=${VERDICT_TEST_STRIPE_MOCK_PORT:-12111}
MINIO_PORT=${VERDICT_TEST_MINIO_PORT:-59000}
# Test-only credentials of the MinIO this script starts (its root user).
MINIO_USER=verdict-test
MINIO_PASSWORD=verdict-test-secret

LOG_PREFIX=services
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$STATE"
# Other users (postgres) must be able to reach their own folder under it.
chmod 755 "$STATE"

# --- Docker engine -----------------------------------------------------------------------------
docker_up() { docker info >/dev/null 2>&1; }

ensure_docker() {
	if command -v docker >/dev/null && docker_up; then
		log "docker: engine answers"
		return
	fi
	if [[ ! -x /usr/sbin/dockerd ]] || ! command -v docker >/dev/null; then
		apt_install docker.io
	fi
	[[ -x /usr/sbin/dockerd ]] || die "docker: /usr/sbin/dockerd missing after installing docker.io"
	if ! docker_up; then
		log "docker: starting dockerd (log: $STATE/dockerd.log)"
		# setsid+nohup: the daemon must outlive this script and the shell that ran it.
		# shellcheck disable=SC2086 # VERDICT_DOCKERD_ARGS is a list of flags on purpose.
		setsid nohup /usr/sbin/dockerd ${VERDICT_DOCKERD_ARGS:-} >"$STATE/dockerd.log" 2>&1 </dev/null &
		if ! wait_for 90 docker_up; then
			tail -n 30 "$STATE/dockerd.log" >&2 || true
			die "docker: dockerd did not answer within 90s (see $STATE/dockerd.log)"
		fi
	fi
	log "docker: engine answers ($(docker version --format '{{.Server.Version}} API {{.Server.APIVersion}}' 2>/dev/null))"
}

# --- PostgreSQL --------------------------------------------------------------------------------
PG_BIN=
find_pg_bin() {
	local d
	for d in /usr/local/bin /usr/lib/postgresql/*/bin; do
		if [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]]; then
			PG_BIN=$d
			return 0
		fi
	done
	return 1
}

pg_up() {
	if command -v pg_isready >/dev/null; then
		pg_isready -q -h 127.0.0.1 -p "$PG_PORT"
	elif command -v psql >/dev/null; then
		psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atqc 'select 1' >/dev/null
	else
		# Without client tools, an open port is the best available sign of life.
		(exec 3<>"/dev/tcp/127.0.0.1/$PG_PORT") 2>/dev/null
	fi
}

ensure_postgres() {
	if pg_up; then
		log "postgres: 127.0.0.1:$PG_PORT answers, reusing it"
		return
	fi
	find_pg_bin || { apt_install postgresql && find_pg_bin; } ||
		die "postgres: no initdb/pg_ctl/postgres found, even after installing postgresql"
	if ! id postgres >/dev/null 2>&1; then
		log "postgres: creating the postgres system user"
		useradd --system --user-group --home-dir "$STATE/pg" --shell /bin/bash postgres ||
			die "postgres: could not create the postgres user"
	fi
	local dir=$STATE/pg
	mkdir -p "$dir"
	chown postgres: "$dir"
	if [[ ! -s $dir/data/PG_VERSION ]]; then
		log "postgres: initdb $dir/data"
		runuser -u postgres -- "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 \
			>"$dir/initdb.log" 2>&1 || die "postgres: initdb failed (see $dir/initdb.log)"
	fi
	log "postgres: starting on 127.0.0.1:$PG_PORT (log: $dir/postgres.log)"
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
		-o "-p $PG_PORT -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" \
		start >&2 || die "postgres: pg_ctl start failed (see $dir/postgres.log)"
	wait_for 30 pg_up || die "postgres: not answering on 127.0.0.1:$PG_PORT"
	log "postgres: up"
}

# --- Redis -------------------------------------------------------------------------------------
redis_up() {
	if command -v redis-cli >/dev/null; then
		[[ $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT") 2>/dev/null
	fi
}

ensure_redis() {
	if redis_up; then
		log "redis: 127.0.0.1:$REDIS_PORT answers, reusing it"
		return
	fi
	command -v redis-server >/dev/null || apt_install redis-server
	command -v redis-server >/dev/null || die "redis: redis-server missing after installing redis-server"
	local dir=$STATE/redis
	mkdir -p "$dir"
	log "redis: starting on 127.0.0.1:$REDIS_PORT (log: $dir/redis.log)"
	# No persistence: test data is throwaway and fsyncs only slow the tests down.
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize yes --dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid" >&2 ||
		die "redis: redis-server failed to start (see $dir/redis.log)"
	wait_for 30 redis_up || die "redis: not answering on 127.0.0.1:$REDIS_PORT"
	log "redis: up"
}

# --- stripe-mock (the payment provider's own mock API server) -------------------------------
STRIPE_MOCK_VERSION=v0.203.0
stripe_mock_up() { (exec 3<>"/dev/tcp/127.0.0.1/$STRIPE_MOCK_PORT") 2>/dev/null; }

ensure_stripe_mock() {
	if stripe_mock_up; then
		log "stripe-mock: 127.0.0.1:$STRIPE_MOCK_PORT answers, reusing it"
		return
	fi
	local bin
	bin="$(go env GOPATH)/bin/stripe-mock"
	if [[ ! -x $bin ]]; then
		command -v go >/dev/null || die "stripe-mock: go is needed to build it"
		log "stripe-mock: go install github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION"
		GOFLAGS=-mod=mod go install "github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION" >&2 ||
			die "stripe-mock: go install failed"
	fi
	log "stripe-mock: starting on 127.0.0.1:$STRIPE_MOCK_PORT (log: $STATE/stripe-mock.log)"
	setsid nohup "$bin" -http-addr "127.0.0.1:$STRIPE_MOCK_PORT" >"$STATE/stripe-mock.log" 2>&1 </dev/null &
	wait_for 30 stripe_mock_up || {
		tail -n 20 "$STATE/stripe-mock.log" >&2 || true
		die "stripe-mock: not answering on 127.0.0.1:$STRIPE_MOCK_PORT"
	}
	log "stripe-mock: up"
}

# --- MinIO (S3-compatible object storage: the report store's S3 tests) -----------------------
# Built from source with go install into a cache outside the repository, reused across runs
# (the first build takes minutes).
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_BIN_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/verdict-tools/minio-$MINIO_VERSION
minio_up() {
	if command -v curl >/dev/null; then
		curl -fs -o /dev/null "http://127.0.0.1:$MINIO_PORT/minio/health/live"
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$MINIO_PORT") 2>/dev/null
	fi
}

ensure_minio() {
	if minio_up; then
		log "minio: 127.0.0.1:$MINIO_PORT answers, reusing it"
		return
	fi
	local bin=$MINIO_BIN_DIR/minio
	if [[ ! -x $bin ]]; then
		command -v go >/dev/null || die "minio: go is needed to build it"
		mkdir -p "$MINIO_BIN_DIR"
		log "minio: go install github.com/minio/minio@$MINIO_VERSION into $MINIO_BIN_DIR (the first build takes minutes)"
		GOBIN=$MINIO_BIN_DIR GOFLAGS=-mod=mod go install "github.com/minio/minio@$MINIO_VERSION" >&2 ||
			die "minio: go install failed"
		[[ -x $bin ]] || die "minio: $bin missing after go install"
	fi
	local dir=$STATE/minio
	mkdir -p "$dir/data"
	log "minio: starting on 127.0.0.1:$MINIO_PORT (log: $dir/minio.log)"
	MINIO_ROOT_USER=$MINIO_USER MINIO_ROOT_PASSWORD=$MINIO_PASSWORD MINIO_BROWSER=off MINIO_UPDATE=off \
		setsid nohup "$bin" server --quiet --address "127.0.0.1:$MINIO_PORT" \
		--console-address "127.0.0.1:$((MINIO_PORT + 1))" "$dir/data" >"$dir/minio.log" 2>&1 </dev/null &
	wait_for 60 minio_up || {
		tail -n 20 "$dir/minio.log" >&2 || true
		die "minio: not answering on 127.0.0.1:$MINIO_PORT (see $dir/minio.log)"
	}
	log "minio: up"
}

# --- An OpenID provider (the single sign-on tests start one per test) --------------------------
# zitadel/oidc's example OpenID provider, a complete provider from a maintained Go module: built
# with go install into a cache outside the repository; each test runs its own process with its
# port, redirect URI and users.
OIDC_OP_VERSION=v3.52.0
OIDC_OP_BIN_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/verdict-tools/zitadel-oidc-$OIDC_OP_VERSION
ensure_oidc_op() {
	OIDC_OP=$OIDC_OP_BIN_DIR/server
	if [[ -x $OIDC_OP ]]; then
		log "oidc provider: $OIDC_OP built"
		return
	fi
	command -v go >/dev/null || die "oidc provider: go is needed to build it"
	mkdir -p "$OIDC_OP_BIN_DIR"
	log "oidc provider: go install github.com/zitadel/oidc/v3/example/server@$OIDC_OP_VERSION into $OIDC_OP_BIN_DIR"
	GOBIN=$OIDC_OP_BIN_DIR GOFLAGS=-mod=mod go install "github.com/zitadel/oidc/v3/example/server@$OIDC_OP_VERSION" >&2 ||
		die "oidc provider: go install failed"
	[[ -x $OIDC_OP ]] || die "oidc provider: $OIDC_OP missing after go install"
}

# --- Chromium (the browser tests drive it headless through the DevTools protocol) ------------
CHROMIUM=
find_chromium() {
	local c
	for c in "${VERDICT_TEST_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
		if [[ -n $c && -x $c ]]; then
			CHROMIUM=$c
			return 0
		fi
	done
	return 1
}

ensure_chromium() {
	find_chromium || { apt_install chromium && find_chromium; } ||
		die "chromium: /usr/bin/chromium missing, even after installing Debian's chromium package"
	local v
	v=$("$CHROMIUM" --headless --no-sandbox --version 2>/dev/null) ||
		die "chromium: $CHROMIUM does not start (try: $CHROMIUM --headless --no-sandbox --version)"
	log "chromium: $v ($CHROMIUM)"
}

# The run isolation tests make a network namespace (ip) and check the engine's firewall rules
# (iptables, which docker.io also needs).
ensure_net_tools() {
	local missing=()
	command -v ip >/dev/null || missing+=(iproute2)
	command -v iptables >/dev/null || missing+=(iptables)
	((${#missing[@]} == 0)) || apt_install "${missing[@]}"
	command -v ip >/dev/null && command -v iptables >/dev/null || die "ip and iptables are needed (iproute2, iptables)"
}

# The docker backend's sandbox program is machine code for x86_64 and aarch64: its test runs the
# one of the other architecture under qemu's user-mode emulator.
ensure_qemu_user() {
	command -v qemu-aarch64 >/dev/null && command -v qemu-x86_64 >/dev/null && return
	apt_install qemu-user
	command -v qemu-aarch64 >/dev/null && command -v qemu-x86_64 >/dev/null || die "qemu-aarch64 and qemu-x86_64 missing after installing qemu-user"
}

# scripts/image.sh validates compose.yaml with compose's own parser: the compose plugin when
# the engine has it, else Debian's docker-compose (bookworm has no docker-compose-plugin).
ensure_compose() {
	if docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; then
		return
	fi
	apt_install docker-compose
	command -v docker-compose >/dev/null || die "docker-compose missing after installing it"
}

# examples/recipes/build.sh installs the Playwright recipe's node_modules with npm on this host
# (from the npm registry), then copies them into the image.
ensure_npm() {
	command -v npm >/dev/null || apt_install npm
	command -v npm >/dev/null || die "npm missing after installing it"
}

ensure_net_tools
ensure_npm
ensure_qemu_user
ensure_docker
ensure_compose
ensure_postgres
ensure_redis
ensure_stripe_mock
ensure_minio
ensure_chromium
ensure_oidc_op

VERDICT_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
VERDICT_TEST_REDIS="redis://127.0.0.1:$REDIS_PORT/0"
VERDICT_TEST_STRIPE="http://127.0.0.1:$STRIPE_MOCK_PORT"
VERDICT_TEST_CHROMIUM=$CHROMIUM
VERDICT_TEST_S3="http://127.0.0.1:$MINIO_PORT"
VERDICT_TEST_S3_ACCESS_KEY=$MINIO_USER
VERDICT_TEST_S3_SECRET_KEY=$MINIO_PASSWORD
export VERDICT_TEST_POSTGRES VERDICT_TEST_REDIS VERDICT_TEST_STRIPE VERDICT_TEST_CHROMIUM
export VERDICT_TEST_S3 VERDICT_TEST_S3_ACCESS_KEY VERDICT_TEST_S3_SECRET_KEY
VERDICT_TEST_OIDC_OP=$OIDC_OP
export VERDICT_TEST_OIDC_OP
printf 'export VERDICT_TEST_POSTGRES=%q\n' "$VERDICT_TEST_POSTGRES"
printf 'export VERDICT_TEST_REDIS=%q\n' "$VERDICT_TEST_REDIS"
printf 'export VERDICT_TEST_STRIPE=%q\n' "$VERDICT_TEST_STRIPE"
printf 'export VERDICT_TEST_CHROMIUM=%q\n' "$VERDICT_TEST_CHROMIUM"
printf 'export VERDICT_TEST_S3=%q\n' "$VERDICT_TEST_S3"
printf 'export VERDICT_TEST_S3_ACCESS_KEY=%q\n' "$VERDICT_TEST_S3_ACCESS_KEY"
printf 'export VERDICT_TEST_S3_SECRET_KEY=%q\n' "$VERDICT_TEST_S3_SECRET_KEY"
printf 'export VERDICT_TEST_OIDC_OP=%q\n' "$VERDICT_TEST_OIDC_OP"
