.PHONY: test build images run

test:
	scripts/test.sh

build:
	go build -o bin/verdict ./cmd/verdict

images:
	examples/suites/build.sh

# Dev mode: SQLite and generated secrets in ./data, mail printed to the console.
run: build
	VERDICT_DEV=$${VERDICT_DEV:-true} ./bin/verdict serve
