# The README's two commands: `make run` (a single-node cluster) and `make test` (the whole suite).
# The steps themselves live in hack/, shared by the README, CI and developers.
.PHONY: run test lint unit verify setup build bench-api bench-cri bench-podstartup bench-scheduler

run:
	hack/run.sh

# lint, verify, unit, then as root what unit cannot run, fuzzing, critest, a smoke run
# and the Kubernetes conformance CI list (hack/conformance-ci.txt).
test:
	hack/test.sh

# gofmt, go vet, staticcheck and the docs' checks.
lint:
	hack/lint.sh

# The tests that need neither root nor a cluster, run as a user without root;
# -short scales the scheduler's property test down (make test runs it whole).
unit:
	hack/unit.sh -short

# Generated files (OpenAPI definitions, go.mod/go.sum, ...) are current.
verify:
	hack/verify.sh

setup:
	hack/setup.sh

build:
	hack/build.sh

# make bench-NAME [BENCH_FLAGS="-h"]: hack/bench.sh NAME, writing docs/benchmarks.md.
bench-api bench-cri bench-podstartup bench-scheduler:
	hack/bench.sh $(@:bench-%=%) $(BENCH_FLAGS)
