.PHONY: test build images run

test:
	scripts/test.sh

build:
	go build -o bin/verdict ./cmd/verdict

images:
	examples/suites/build.sh

run: build
	./bin/verdict serve
