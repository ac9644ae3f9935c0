# shellcheck shell=bash
# Shared by every hack/ script: where things live and how to install what is missing.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT_DIR="$REPO_ROOT/_output"
TOOLS_DIR="$OUT_DIR/tools"
BERTH_BIN="$OUT_DIR/berth"
# The --eviction-hard of the nodes berth's test runs start (testkit/cluster.EvictionHard
# for Go tests): the defaults without nodefs.available, as kind configures its nodes,
# since they share the disk of the machine running them.
TEST_EVICTION_HARD="memory.available<100Mi,pid.available<10%"
export BERTH_TOOLS_DIR="$TOOLS_DIR"

# one_build_config: berth's build, go vet, staticcheck and the test binaries
# under make test share one build configuration, so that each package is
# compiled once for all of them:
#  - CGO_ENABLED=0, as hack/build.sh, hack/build-conformance.sh and
#    hack/build-bench-peers.sh build. With cgo on (go's default where gcc is
#    installed) go vet, staticcheck and go test would compile net, os/user and
#    everything above them a second time;
#  - -pgo=off. With go's default -pgo=auto, each main package that has a
#    default.pgo (cmd/berth, bench/scheduler) gets its ~2400 dependencies
#    compiled once more with the profile: `go list -deps -test ./...` counts
#    9733 packages, and 3097 with -pgo=off.
# e2e.test and the conformance images' Go programs are built without
# -trimpath for the same reason. Builds for users and benchmarks (make run,
# hack/bench.sh) keep the profile; the builds made under make test
# (hack/build.sh, berthbin) inherit this.
one_build_config() {
  export CGO_ENABLED=0
  [[ " ${GOFLAGS:-} " == *" -pgo=off "* ]] || export GOFLAGS="${GOFLAGS:+$GOFLAGS }-pgo=off"
}

# Pinned tool versions; bump deliberately.
STATICCHECK_VERSION=v0.8.2
CRI_TOOLS_VERSION=v1.37.0

# Debian packages the tests and the cluster need (binary -> package).
APT_PACKAGES=(
  runc:runc
  /usr/lib/cni/bridge:containernetworking-plugins
  /bin/busybox:busybox-static
  bzip2:bzip2 # busybox's source tarball (hack/build-busybox-ash.sh)
  make:make
  curl:curl
  /usr/bin/nc.openbsd:netcat-openbsd # the conformance agnhost image's nc (UDP)
  /usr/bin/dig:bind9-dnsutils # dig in the conformance agnhost and glibc-dns-testing images
  iptables:iptables
  nft:nftables # kube-proxy's nftables proxier in berth agent
  ip:iproute2
  nsenter:util-linux # the multi-node test enters its network namespaces
  script:bsdutils    # a pseudo-terminal for crictl exec -it in the crictl test
  containerd:containerd
  gcc:gcc
  /usr/lib/x86_64-linux-gnu/libc.a:libc6-dev # static C helpers in test images (pause, pgrep, ...)
  dpkg-deb:dpkg
)

# log prints a step with the wall-clock time it starts at, so a run's log
# shows where its time goes.
log() { printf '==> %s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

have() { [[ "$1" == /* ]] && [[ -e "$1" ]] || command -v "$1" >/dev/null 2>&1; }

install_apt_packages() {
  local missing=() entry bin pkg
  for entry in "${APT_PACKAGES[@]}"; do
    bin=${entry%%:*} pkg=${entry#*:}
    have "$bin" || missing+=("$pkg")
  done
  # The test kit fetches Debian's dynamic busybox with `apt-get download`,
  # which needs package lists even when every package is already installed.
  if ((${#missing[@]} == 0)) && ! apt-cache show busybox >/dev/null 2>&1; then
    log "refreshing Debian package lists"
    apt-get update -qq
  fi
  ((${#missing[@]} == 0)) && return 0
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# go_tool NAME MODULE@VERSION: install a Go tool into TOOLS_DIR unless that version is there.
go_tool() {
  local name=$1 spec=$2 stamp="$TOOLS_DIR/.$1.version"
  if [[ -x "$TOOLS_DIR/$name" && "$(cat "$stamp" 2>/dev/null)" == "$spec" ]]; then return 0; fi
  log "installing $spec"
  mkdir -p "$TOOLS_DIR"
  GOBIN="$TOOLS_DIR" go install "$spec"
  echo "$spec" >"$stamp"
}

# critest has only test files, so it is built with `go test -c` inside its module.
install_critest() {
  local stamp="$TOOLS_DIR/.critest.version"
  if [[ -x "$TOOLS_DIR/critest" && "$(cat "$stamp" 2>/dev/null)" == "$CRI_TOOLS_VERSION" ]]; then return 0; fi
  log "building critest $CRI_TOOLS_VERSION"
  local dir
  dir=$(cd "$REPO_ROOT" && go mod download -json "sigs.k8s.io/cri-tools@$CRI_TOOLS_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  (cd "$dir" && GOFLAGS=-mod=mod go test -c -o "$TOOLS_DIR/critest" ./cmd/critest)
  echo "$CRI_TOOLS_VERSION" >"$stamp"
}

install_tools() {
  go_tool staticcheck "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
  go_tool crictl "sigs.k8s.io/cri-tools/cmd/crictl@$CRI_TOOLS_VERSION"
  install_critest
  log "busybox's ash for the conformance images"
  install -m 0755 "$("$REPO_ROOT/hack/build-busybox-ash.sh")" "$TOOLS_DIR/busybox-ash"
}

build_berth() {
  log "building berth"
  "$REPO_ROOT/hack/build.sh" "$OUT_DIR"
}

# start_test_registry MODE DIR [LISTEN] runs hack/testregistry --MODE
# (critest, conformance) on LISTEN (default 127.0.0.1:0; a host address
# when nodes in network namespaces pull from it) in a process group of its own (so stopping
# -$registry_pid also stops the registry `go run` execs), logging to
# DIR/registry.log, and returns once it serves: registry_pid and REGISTRY
# (HOST:PORT) are set.
start_test_registry() {
  local mode=$1 dir=$2 listen=${3:-127.0.0.1:0}
  set -m
  go run ./hack/testregistry --listen "$listen" "--$mode" --ready-file "$dir/registry.addr" >"$dir/registry.log" 2>&1 &
  registry_pid=$!
  set +m
  for _ in $(seq 600); do
    [[ -s "$dir/registry.addr" ]] && break
    kill -0 "$registry_pid" 2>/dev/null || { cat "$dir/registry.log" >&2; return 1; }
    sleep 1
  done
  [[ -s "$dir/registry.addr" ]] || { echo "test registry ($mode) not ready after 600 s" >&2; return 1; }
  REGISTRY=$(cat "$dir/registry.addr")
}

# stop_test_registry stops what start_test_registry started, if anything.
stop_test_registry() {
  [[ -n "${registry_pid:-}" ]] || return 0
  kill -TERM -- "-$registry_pid" 2>/dev/null || kill -TERM "$registry_pid" 2>/dev/null
  wait "$registry_pid" 2>/dev/null
}

# remove_scratch DIR unmounts everything mounted below DIR, deepest first,
# then removes it.
remove_scratch() {
  local dir=$1
  findmnt -rn -o TARGET | grep -F "$dir/" | sort -r | while read -r m; do umount -l "$m"; done
  rm -rf "$dir"
}
