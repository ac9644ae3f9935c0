# The README's two commands: `make run` (a single-node cluster) and `make test` (the whole suite).
# The steps themselves live in hack/, shared by the README, CI and developers.
.PHONY: run test lint setup build

run:
	hack/run.sh

test:
	hack/test.sh

# gofmt, go vet, staticcheck and the docs' checks; make test runs them first.
lint:
	hack/lint.sh

setup:
	hack/setup.sh

build:
	hack/build.sh
