#!/usr/bin/env bash
# Builds the upstream Kubernetes conformance tools into _output/conformance/:
#   e2e.test  upstream's end-to-end suite (k8s.io/kubernetes test/e2e, the
#             version berth's go.mod requires), compiled with `go test -c` from
#             hack/conformance/e2e, a copy of upstream's test/e2e/e2e_test.go
#             inside berth's own module: it shares berth's go.mod (staging
#             modules mapped to their published releases) and build cache.
#   ginkgo    the ginkgo CLI at the version k8s.io/kubernetes's go.mod requires,
#             which runs e2e.test in parallel processes.
#   agnhost   upstream's test/images/agnhost, static (CGO_ENABLED=0), which
#             hack/testregistry --conformance puts into the agnhost images.
#             go.mod names it as a tool, which keeps the one module it needs
#             beyond berth's (sctp) in berth's module graph, so it is built
#             there too and shares the build cache.
# All three are built in berth's module, so Go's build cache knows when
# go.mod or the flags change, and a rebuild with nothing changed takes
# seconds (6 s for all three). Needs only the Go module proxy.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

CONF_DIR="$OUT_DIR/conformance"
mkdir -p "$CONF_DIR"
export CGO_ENABLED=0

kube_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
kube_mod=$(go list -m -f '{{.GoMod}}' k8s.io/kubernetes)
ginkgo_version=$(awk '$1 == "github.com/onsi/ginkgo/v2" {print $2; exit}' "$kube_mod")
berth_ginkgo=$(go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)
if [[ "$ginkgo_version" != "$berth_ginkgo" ]]; then
  echo "build-conformance.sh: k8s.io/kubernetes $kube_version wants ginkgo $ginkgo_version, berth's go.mod has $berth_ginkgo" >&2
  exit 1
fi

# The version component-base reports (e2e.test --version), set as upstream's builds set it: the
# tests read it too, e.g. to pick Pod Security's fixtures for their own minor version.
kube_minor=${kube_version#v1.}
kube_minor=${kube_minor%%.*}
ldflags="-X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$kube_minor"
# No -trimpath here or for ginkgo and agnhost: it keys every package apart in
# the build cache, so e2e.test would compile its k8s.io graph again instead of
# sharing what berth's build and tests compiled.
log "building e2e.test $kube_version (10+ minutes cold on 2 cores)"
go test -c -tags conformance -ldflags "$ldflags" -o "$CONF_DIR/e2e.test" ./hack/conformance/e2e
log "building ginkgo $ginkgo_version"
go build -o "$CONF_DIR/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
log "building agnhost from k8s.io/kubernetes $kube_version"
go build -ldflags "-s -w" -o "$CONF_DIR/agnhost" k8s.io/kubernetes/test/images/agnhost
log "e2e.test, ginkgo and agnhost in $CONF_DIR"
