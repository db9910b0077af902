.PHONY: test build images run

test:
	scripts/test.sh

# The version `verdict version` and /healthz report: the commit (or tag) of the source, with
# -dirty for uncommitted changes; "dev" outside a git checkout. Override with make VERSION=….
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

build:
	go build -ldflags "-X main.version=$(VERSION)" -o bin/verdict ./cmd/verdict

images:
	examples/suites/build.sh

# Dev mode: SQLite and generated secrets in ./data, mail printed to the console.
run: build
	VERDICT_DEV=$${VERDICT_DEV:-true} ./bin/verdict serve
