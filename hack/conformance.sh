#!/usr/bin/env bash
# Kubernetes conformance: upstream's e2e.test (v1.37.2, hack/build-conformance.sh)
# against a fresh berth cluster, offline: one berth server with its local
# node, and with --nodes N, N-1 more nodes joined with the server's join
# token, each a berth runtime and a berth agent in a network namespace of its
# own on the same bridge as the server's address. Every image the tests
# pull comes from hack/testregistry --conformance on loopback, through the
# local runtime's --registry-mirror. Two passes, as upstream runs them: the
# [Conformance] tests that are not [Serial] with `ginkgo --procs N`, then the
# [Serial] ones alone. hack/tools/conformance-report merges their JUnit into
# the results file (one line per test), names the tests that passed before
# and fail now first, and writes the per-test table into docs/conformance.md.
#
#   hack/conformance.sh [--focus RE] [--skip RE] [--shard N/M] [--list FILE]
#                       [--procs N] [--nodes N] [--timeout DURATION] [--results FILE] [--no-doc]
#                       [--fresh] [--no-preflight] [--kubelet-node] [--labels EXPR]
#
#   --focus RE      only the [Conformance] tests whose text matches RE (Ginkgo regexp)
#   --skip RE       leave out the tests whose text matches RE
#   --shard N/M     the Nth of M shards of the list (round robin over the sorted names)
#   --list FILE     only the tests named in FILE, one a line (hack/conformance-ci.txt);
#                   without --shard, every one of them must pass (a blocked, skipped
#                   or not-run one fails the run too), and the last lines say
#                   `conformance: N passed, M failed` over them and the time
#   --procs N       parallel Ginkgo processes of the first pass (default 2)
#   --nodes N       schedulable nodes (default 1); the conformance suite's own
#                   count of nodes, and the DaemonSet rollback test, need 2
#   --timeout D     Ginkgo's deadline for each pass (default 3h)
#   --results FILE  results file to compare with and update (default docs/conformance-results.tsv;
#                   with --labels or --kubelet-node, _output/conformance/results-<labels>[-kubelet].tsv
#                   and no doc)
#   --no-doc        leave docs/conformance.md alone
#   --fresh         forget the previous results of tests this run does not report
#   --no-preflight  start e2e.test even without the default/kubernetes Service or
#                   kube-root-ca.crt in a new namespace after 30 s (see the pre-flight below)
#   --kubelet-node  one more node: upstream's kubelet v1.37.2 (hack/build-bench-peers.sh
#                   kubelet) on a berth runtime, joined with the server's bootstrap token
#                   (TLS bootstrap, serving certificate through berth's approver); berth's
#                   own nodes get the control-plane NoSchedule taint and are cordoned, so the tests' pods
#                   run on the kubelet's node
#   --labels EXPR   the Ginkgo label filter of the tests (default Conformance; the
#                   passes add `&& !Serial` and `&& Serial`), e.g. NodeConformance
#
# Exits non-zero if a test failed, a --list test did not pass, or the suite's
# set-up failed. Needs root and hack/setup.sh; builds e2e.test, ginkgo and
# agnhost on first use. JUnit and logs are kept in
# _output/conformance/reports/<time>/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

CONF_DIR="$OUT_DIR/conformance"
MIRRORED_HOSTS=(registry.k8s.io gcr.io docker.io)
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
NODE_NAME=berth-conformance
# The node's InternalIP may not be 127.0.0.1: the HostPort tests bind one
# pod's port on 127.0.0.1 and another's on the node's address. A bridge of
# this run's own gives the host an address of its own (198.18.0.0/15 is
# reserved for benchmark networks, RFC 2544), with a port into a network
# namespace so that it has a carrier; the joined nodes' namespaces are
# further ports, one L2 segment, so the agents' host-gw routes carry pod
# traffic between nodes. All traffic stays on this host.
NODE_IP=198.18.0.1
NODE_PREFIX=24
NODE_PEER_IP=198.18.0.2
NODE_NETNS=berth-conformance-$$
NODE_BRIDGE=bconf$$
NODE_LINK=bcp$$
# What the joined nodes' agents need to match the server's local node.
CLUSTER_CIDR=10.88.0.0/16
SERVICE_CIDR=10.96.0.0/12
RUNTIME_HANDLER=test-handler
CLUSTER_DNS=10.96.0.10
KUBELET_BIN=$OUT_DIR/bench/kubelet
KUBELET_CGROUP_ROOT=/berth-kubelet-$$

preflight_check=1 focus="" skip="" shard="" list="" procs=2 nodes=1 timeout=3h results="" doc=1 fresh=()
kubelet_node=0 labels=Conformance
usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
while (($#)); do
  case $1 in
  --focus) focus=$2; shift 2 ;;
  --skip) skip=$2; shift 2 ;;
  --shard) shard=$2; shift 2 ;;
  --list) list=$2; shift 2 ;;
  --procs) procs=$2; shift 2 ;;
  --nodes) nodes=$2; shift 2 ;;
  --timeout) timeout=$2; shift 2 ;;
  --results) results=$2; shift 2 ;;
  --no-doc) doc=0; shift ;;
  --fresh) fresh=(--fresh); shift ;;
  --no-preflight) preflight_check=0; shift ;;
  --kubelet-node) kubelet_node=1; shift ;;
  --labels) labels=$2; shift 2 ;;
  -h | --help) usage ;;
  *) echo "conformance.sh: unknown argument $1" >&2; usage ;;
  esac
done
if [[ -n "$focus" && ( -n "$list" || -n "$shard" ) ]]; then
  echo "conformance.sh: --focus selects by regexp, --list and --shard by name; use one or the other" >&2
  exit 2
fi
if [[ -z "$results" && $labels == Conformance && kubelet_node -eq 0 ]]; then
  results=$REPO_ROOT/docs/conformance-results.tsv
elif [[ -z "$results" ]]; then
  # Other selections and nodes keep their results apart, and out of the doc.
  slug=$(tr -c 'A-Za-z0-9\n' - <<<"$labels")
  ((kubelet_node == 0)) || slug+=-kubelet
  results=$OUT_DIR/conformance/results-$slug.tsv doc=0
fi
[[ -z "$list" || -f "$list" ]] || { echo "conformance.sh: no list file $list" >&2; exit 2; }
[[ "$nodes" =~ ^[1-9]$ ]] || { echo "conformance.sh: --nodes takes 1 to 9, not $nodes" >&2; exit 2; }
[[ -z "$list" ]] || list=$(cd "$(dirname "$list")" && pwd)/$(basename "$list")

if ((EUID != 0)); then echo "conformance.sh: must run as root" >&2; exit 1; fi
# The cluster under test is this checkout's berth, built now (cheap when current).
build_berth
for bin in "$BERTH_BIN" "$OUT_DIR/berth-agent" "$OUT_DIR/berth-kubectl" "$OUT_DIR/berth-runtime" "$OUT_DIR/berth-monitor" "$TOOLS_DIR/crictl"; do
  [[ -x "$bin" ]] || { echo "conformance.sh: $bin missing; run hack/setup.sh" >&2; exit 1; }
done
"$REPO_ROOT/hack/build-conformance.sh"
((kubelet_node == 0)) || "$REPO_ROOT/hack/build-bench-peers.sh" kubelet
log "conformance: building the report tool"
go build -o "$CONF_DIR/conformance-report" ./hack/tools/conformance-report
REPORT_TOOL="$CONF_DIR/conformance-report"

started=$(date +%s)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
REPORT_DIR="$CONF_DIR/reports/$stamp"
mkdir -p "$REPORT_DIR"
WORK=$(mktemp -d /tmp/berth-conformance.XXXXXX)
# Traversable, as /var/lib is: a user-namespaced pod's root reaches its files below.
chmod 711 "$WORK"
registry_pid="" server_pid=""
joined_agents=() joined_runtimes=() # the joined nodes' processes

# bridge_port NETNS LINK ADDRESS: a veth from the bridge (host end LINK)
# to eth0 in the new namespace NETNS, which holds ADDRESS.
bridge_port() {
  ip netns add "$1" && ip -n "$1" link set lo up &&
    ip link add "$2" type veth peer name eth0 netns "$1" &&
    ip link set "$2" master "$NODE_BRIDGE" up &&
    ip -n "$1" addr add "$3/$NODE_PREFIX" dev eth0 && ip -n "$1" link set eth0 up
}

# node_address_up: NODE_IP on the bridge, with its first port; an earlier
# run's link holding the address (its cleanup killed) goes first.
node_address_up() {
  local stale
  for stale in $(ip -o addr show to "$NODE_IP" | awk '{print $2}' | cut -d@ -f1); do
    ip link del "$stale" 2>/dev/null || true
  done
  ip link add "$NODE_BRIDGE" type bridge && ip addr add "$NODE_IP/$NODE_PREFIX" dev "$NODE_BRIDGE" &&
    ip link set "$NODE_BRIDGE" up && bridge_port "$NODE_NETNS" "$NODE_LINK" "$NODE_PEER_IP"
}

# joined_node K: the Kth node's name, namespace, host-side link and address.
joined_node() {
  JOINED_NAME=$NODE_NAME-$1 JOINED_NETNS=$NODE_NETNS-n$1 JOINED_LINK=bcn$1$$ JOINED_IP=198.18.0.$((10 + $1))
}

node_address_down() {
  local k
  for ((k = 2; k <= nodes + kubelet_node; k++)); do
    joined_node "$k"
    ip link del "$JOINED_LINK" 2>/dev/null
    ip netns del "$JOINED_NETNS" 2>/dev/null
  done
  ip link del "$NODE_LINK" 2>/dev/null
  ip link del "$NODE_BRIDGE" 2>/dev/null
  ip netns del "$NODE_NETNS" 2>/dev/null
}

# start_node_runtime K: the Kth node's namespace, on the bridge, and its
# berth runtime, started through nsenter (network namespace only, so the
# runtime's mounts are the host's, as the local node's are). Services reach
# the API server and cluster DNS at NODE_IP: a route sends the service range
# there, as a node's default route would, and nothing else leaves the
# namespace.
start_node_runtime() {
  local dir
  joined_node "$1"
  dir=$WORK/nodes/$JOINED_NAME
  mkdir -p "$dir"
  bridge_port "$JOINED_NETNS" "$JOINED_LINK" "$JOINED_IP" &&
    ip -n "$JOINED_NETNS" route add "$SERVICE_CIDR" via "$NODE_IP" || return
  nsenter --net="/run/netns/$JOINED_NETNS" -- "$BERTH_BIN" runtime --root "$dir/runtime" --state-dir "$dir/runtime-state" \
    --listen "unix://$dir/runtime.sock" --disable-nri --wait-for-pod-cidr --pause-image "$PAUSE_IMAGE" \
    --runtime-handler "$RUNTIME_HANDLER" "${mirrors[@]}" >"$dir/runtime.log" 2>&1 &
  joined_runtimes+=($!)
  for _ in $(seq 60); do [[ -S "$dir/runtime.sock" ]] && break; sleep 1; done
  [[ -S "$dir/runtime.sock" ]] || { tail -n 20 "$dir/runtime.log" >&2; return 1; }
}

# start_joined_node K: the Kth node, a berth runtime and a berth agent in
# its own namespace, joined with the server's token.
start_joined_node() {
  local dir token
  start_node_runtime "$1" || return
  dir=$WORK/nodes/$JOINED_NAME
  token=$(cat "$WORK/data/token")
  nsenter --net="/run/netns/$JOINED_NETNS" -- "$BERTH_BIN" agent --server "https://$NODE_IP:$port" --token "$token" \
    --node-name "$JOINED_NAME" --node-ip "$JOINED_IP" --data-dir "$dir/agent" --runtime-endpoint "unix://$dir/runtime.sock" \
    --cluster-cidr "$CLUSTER_CIDR" --pod-infra-container-image "$PAUSE_IMAGE" --eviction-hard "$TEST_EVICTION_HARD" >"$dir/agent.log" 2>&1 &
  joined_agents+=($!)
}

# start_kubelet_node K: the Kth node, a berth runtime and upstream's
# kubelet in its own namespace. The kubelet bootstraps its client
# certificate with the bootstrap token inside the server's join token
# (berth::<CA hash>::<token>) and asks for its serving certificate, which
# berth's certificates controller approves as it does an agent's. Its pods'
# cgroups live under a root of this run's own, apart from the local node's
# /kubepods. Its pods reach other nodes' pods through the server's host,
# which routes every node's pod range.
start_kubelet_node() {
  local dir token kc
  start_node_runtime "$1" || return
  ip -n "$JOINED_NETNS" route add "$CLUSTER_CIDR" via "$NODE_IP" || return
  dir=$WORK/nodes/$JOINED_NAME
  token=$(cat "$WORK/data/token")
  kc=("$BERTH_BIN" kubectl config --kubeconfig "$dir/bootstrap.kubeconfig")
  make_cgroup_root "$KUBELET_CGROUP_ROOT" || return
  "${kc[@]}" set-cluster berth --server "https://$NODE_IP:$port" \
    --certificate-authority "$WORK/data/server-ca.crt" --embed-certs >/dev/null &&
    "${kc[@]}" set-credentials kubelet-bootstrap --token "${token##*::}" >/dev/null &&
    "${kc[@]}" set-context default --cluster berth --user kubelet-bootstrap >/dev/null &&
    "${kc[@]}" use-context default >/dev/null || return
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $JOINED_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $WORK/data/pki/client-ca.crt}
authorization: {mode: Webhook}
serverTLSBootstrap: true
rotateCertificates: true
containerRuntimeEndpoint: unix://$dir/runtime.sock
cgroupDriver: cgroupfs
cgroupRoot: $KUBELET_CGROUP_ROOT
failCgroupV1: false
failSwapOn: false
clusterDNS: [$CLUSTER_DNS]
clusterDomain: cluster.local
podLogsDir: $dir/pod-logs
evictionHard: {memory.available: 100Mi, pid.available: "10%"}
EOF
  nsenter --net="/run/netns/$JOINED_NETNS" -- "$KUBELET_BIN" --config "$dir/kubelet.yaml" \
    --bootstrap-kubeconfig "$dir/bootstrap.kubeconfig" --kubeconfig "$dir/kubelet.kubeconfig" \
    --root-dir "$dir/kubelet" --cert-dir "$dir/kubelet/pki" --hostname-override "$JOINED_NAME" --node-ip "$JOINED_IP" \
    --v=2 >"$dir/agent.log" 2>&1 &
  joined_agents+=($!)
}

# make_cgroup_root PATH: PATH in every cgroup hierarchy (v1: one per
# controller; v2: the unified one): the kubelet wants its cgroupRoot to exist.
make_cgroup_root() {
  local hierarchy
  for hierarchy in $(cgroup_hierarchies); do mkdir -p "$hierarchy$1" || return; done
}

# remove_cgroup_root PATH: what make_cgroup_root made, deepest first, once
# the kubelet's pods are gone.
remove_cgroup_root() {
  local hierarchy
  for hierarchy in $(cgroup_hierarchies); do
    [[ -d "$hierarchy$1" ]] && find "$hierarchy$1" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}

cgroup_hierarchies() {
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    echo /sys/fs/cgroup
    return
  fi
  local h
  for h in /sys/fs/cgroup/*; do
    [[ -d "$h" && ! -L "$h" && -f "$h/cgroup.procs" ]] && echo "$h"
  done
}

# stop_joined_nodes: the agents first (alive, one would start its pods'
# sandboxes again), then every pod through each runtime, then the runtimes.
stop_joined_nodes() {
  local pid dir
  for pid in "${joined_agents[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${joined_agents[@]}"; do wait "$pid" 2>/dev/null; done
  for dir in "$WORK"/nodes/*; do
    [[ -S "$dir/runtime.sock" ]] && { crictl_rm "$dir/runtime.sock" || echo "conformance.sh: could not remove the pods left in $dir" >&2; }
  done
  for pid in "${joined_runtimes[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${joined_runtimes[@]}"; do wait "$pid" 2>/dev/null; done
  for dir in "$WORK"/nodes/*; do
    cp "$dir/agent.log" "$REPORT_DIR/$(basename "$dir")-agent.log" 2>/dev/null
    cp "$dir/runtime.log" "$REPORT_DIR/$(basename "$dir")-runtime.log" 2>/dev/null
  done
}

# crictl_rm SOCKET: stop and remove every pod the runtime on SOCKET holds.
crictl_rm() { "$TOOLS_DIR/crictl" --runtime-endpoint "unix://$1" --timeout 60s rmp -fa >/dev/null 2>&1; }

cleanup() {
  local rc=$?
  set +e
  stop_joined_nodes
  ((kubelet_node == 0)) || remove_cgroup_root "$KUBELET_CGROUP_ROOT"
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    crictl_rm "$WORK/run/runtime.sock"
    kill -TERM "$server_pid"
    wait "$server_pid" 2>/dev/null
  fi
  cp "$WORK/server.log" "$WORK/registry.log" "$REPORT_DIR/" 2>/dev/null
  # Pods outlive the server by design, and its agent may have started one
  # after the crictl above: a runtime of our own on the same state removes
  # whatever is left.
  if [[ -d "$WORK/data/runtime-state" ]]; then
    "$BERTH_BIN" runtime --root "$WORK/data/runtime" --state-dir "$WORK/data/runtime-state" \
      --listen "unix://$WORK/cleanup.sock" --disable-nri >"$REPORT_DIR/cleanup-runtime.log" 2>&1 &
    local rt=$! i
    for i in $(seq 60); do [[ -S "$WORK/cleanup.sock" ]] && break; sleep 1; done
    crictl_rm "$WORK/cleanup.sock" || echo "conformance.sh: could not remove the pods left in $WORK" >&2
    kill -TERM "$rt"
    wait "$rt" 2>/dev/null
  fi
  stop_test_registry
  node_address_down
  remove_scratch "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ $labels == Conformance ]]; then
  log "conformance: listing the [Conformance] tests of e2e.test"
  "$CONF_DIR/e2e.test" --list-conformance-tests >"$WORK/conformance.yaml"
else
  # The tests the label filter selects, in --list-conformance-tests' form,
  # from a dry run's JUnit (the selected ones are the ones not skipped).
  # The framework's own JUnit (--report-dir) names tests as the real runs'
  # does; Ginkgo's (--ginkgo.junit-report) appends each test's labels.
  log "conformance: listing the tests of e2e.test labelled $labels"
  mkdir -p "$WORK/dry-run"
  "$CONF_DIR/e2e.test" --ginkgo.dry-run --ginkgo.label-filter="$labels" --report-dir="$WORK/dry-run" >/dev/null 2>&1
  python3 - "$WORK/dry-run/junit_01.xml" >"$WORK/conformance.yaml" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).iter("testcase"):
    name = case.get("name", "")
    if name.startswith("[It] ") and case.find("skipped") is None:
        print("- codename: " + json.dumps(name[len("[It] "):]))
EOF
fi
total=$("$REPORT_TOOL" list --conformance "$WORK/conformance.yaml" | wc -l)
serial=$("$REPORT_TOOL" list --conformance "$WORK/conformance.yaml" --serial=true | wc -l)
log "conformance: e2e.test lists $total tests labelled $labels, $serial of them [Serial]"

log "conformance: node address $NODE_IP (bridge $NODE_BRIDGE, its first port into netns $NODE_NETNS)"
node_address_up || { echo "conformance.sh: could not set up the node address $NODE_IP" >&2; exit 1; }

# On the node address, so that the joined nodes' runtimes pull from it too.
log "conformance: starting the offline image registry"
start_test_registry conformance "$WORK" "$NODE_IP:0" || exit 1

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("'"$NODE_IP"'",0)); print(s.getsockname()[1])')
mirrors=(--insecure-registry "$REGISTRY")
for host in "${MIRRORED_HOSTS[@]}"; do mirrors+=(--registry-mirror "$host=http://$REGISTRY"); done
# The server listens on the node address, which it also advertises: pods
# reach it there through the kubernetes Service, and its cluster DNS
# through the kube-dns Service.
log "conformance: starting berth server on $NODE_IP:$port with node $NODE_NAME (images from $REGISTRY)"
"$BERTH_BIN" server --data-dir "$WORK/data" --socket-dir "$WORK/run" --bind-address "$NODE_IP" --port "$port" \
  --node-name "$NODE_NAME" --node-ip "$NODE_IP" --agent-port 0 --pause-image "$PAUSE_IMAGE" --runtime-handler "$RUNTIME_HANDLER" --allow-privileged \
  --cluster-cidr "$CLUSTER_CIDR" --service-cluster-ip-range "$SERVICE_CIDR" "${mirrors[@]}" \
  --agent-arg="--eviction-hard=$TEST_EVICTION_HARD" >"$WORK/server.log" 2>&1 &
server_pid=$!
KUBECONFIG_FILE="$WORK/data/admin.kubeconfig"
kubectl() { "$BERTH_BIN" kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }
for _ in $(seq 180); do
  kill -0 "$server_pid" 2>/dev/null || { tail -n 50 "$WORK/server.log" >&2; echo "conformance.sh: berth server exited" >&2; exit 1; }
  [[ -s "$KUBECONFIG_FILE" ]] && [[ -n "$(kubectl get node "$NODE_NAME" -o name 2>/dev/null)" ]] && break
  sleep 1
done
node_names=("$NODE_NAME")
for ((k = 2; k <= nodes; k++)); do
  joined_node "$k"
  log "conformance: joining node $JOINED_NAME at $JOINED_IP (netns $JOINED_NETNS)"
  start_joined_node "$k" || { echo "conformance.sh: could not start node $JOINED_NAME" >&2; exit 1; }
  node_names+=("$JOINED_NAME")
done
if ((kubelet_node)); then
  joined_node $((nodes + 1))
  log "conformance: joining upstream's kubelet as node $JOINED_NAME at $JOINED_IP (netns $JOINED_NETNS)"
  start_kubelet_node $((nodes + 1)) || { echo "conformance.sh: could not start the kubelet node $JOINED_NAME" >&2; exit 1; }
  kubelet_name=$JOINED_NAME
fi
# wait_node_ready NODE LOG: waits up to 120 s for NODE to register and
# 180 s more for it to be Ready; on failure shows LOG's tail and exits.
wait_node_ready() {
  local node=$1 log_file=$2
  for _ in $(seq 120); do
    [[ -n "$(kubectl get node "$node" -o name 2>/dev/null)" ]] && break
    sleep 1
  done
  kubectl wait --for=condition=Ready "node/$node" --timeout=180s >/dev/null ||
    { tail -n 50 "$log_file" >&2; echo "conformance.sh: node $node not Ready after 180 s (logs in $WORK)" >&2; exit 1; }
}
for node in "${node_names[@]}"; do
  wait_node_ready "$node" "$WORK/server.log"
done
# e2e.test counts a node schedulable only without the node lifecycle
# controller's not-ready taint, and otherwise re-checks it only every 30 s.
for node in "${node_names[@]}"; do
  for _ in $(seq 120); do
    [[ "$(kubectl get node "$node" -o jsonpath='{.spec.taints[*].key}' 2>/dev/null)" != *node.kubernetes.io/not-ready* ]] && break
    sleep 1
  done
  taints=$(kubectl get node "$node" -o jsonpath='{.spec.taints[*].key}')
  [[ "$taints" != *node.kubernetes.io/not-ready* ]] ||
    log "conformance: node $node still has the not-ready taint after 120 s ($taints); e2e.test will wait for it"
done
if ((kubelet_node)); then
  # The kubelet's node must be Ready, and the tests' pods go there: berth's
  # own nodes are tainted as control-plane nodes, whose taint e2e.test
  # does not count against a node's readiness, and cordoned, since tests
  # that place a pod by name take the first Ready node that is not
  # (PodOSRejection's findLinuxNode).
  wait_node_ready "$kubelet_name" "$WORK/nodes/$kubelet_name/agent.log"
  for node in "${node_names[@]}"; do
    kubectl taint node "$node" node-role.kubernetes.io/control-plane:NoSchedule --overwrite >/dev/null || exit 1
    kubectl cordon "$node" >/dev/null || exit 1
  done
  node_names+=("$kubelet_name")
fi
cp "$KUBECONFIG_FILE" "$REPORT_DIR/admin.kubeconfig"
# What discovery serves: the report tool calls a 404 naming anything else "blocked".
kubectl api-resources -o name >"$REPORT_DIR/api-resources.txt"

# e2e.test runs kubectl as one executable.
KUBECTL="$WORK/kubectl"
printf '#!/bin/sh\nexec %q kubectl "$@"\n' "$BERTH_BIN" >"$KUBECTL"
chmod 755 "$KUBECTL"

# Pre-flight: what e2e.test needs before any test can run. Its set-up reads
# the default/kubernetes Service, and every test first waits up to 2 minutes
# for kube-root-ca.crt in its new namespace and fails without it: without a
# publisher a full run would spend hours failing that way. One namespace
# tells in 30 s. If either is missing, e2e.test is not started and the
# results say why (--no-preflight starts it anyway).
preflight=""
if ((preflight_check)); then
  missing=()
  kubectl get service kubernetes -n default -o name >/dev/null 2>&1 ||
    missing+=("no default/kubernetes Service (e2e.test's set-up reads it)")
  kubectl create namespace conformance-preflight >/dev/null 2>&1 || true
  for _ in $(seq 30); do
    kubectl get configmap kube-root-ca.crt -n conformance-preflight -o name >/dev/null 2>&1 && break
    sleep 1
  done
  kubectl get configmap kube-root-ca.crt -n conformance-preflight -o name >/dev/null 2>&1 ||
    missing+=("no kube-root-ca.crt ConfigMap in a new namespace after 30 s (every test waits 2 min for it, then fails)")
  kubectl delete namespace conformance-preflight --wait=false >/dev/null 2>&1 || true
  if ((${#missing[@]})); then
    preflight=$(printf '%s; ' "${missing[@]}")
    preflight="${preflight%; }; e2e.test not started"
  fi
fi

# pass NAME PROCS LABELS FOCUS: one ginkgo run; its JUnit is junit_NAME_01.xml.
pass() {
  local name=$1 n=$2 labels=$3 pass_focus=$4 rc=0
  local args=(--procs="$n" --timeout="$timeout" --no-color --label-filter="$labels")
  [[ -z "$pass_focus" ]] || args+=(--focus="$pass_focus")
  [[ -z "$skip" ]] || args+=(--skip="$skip")
  log "conformance: $name pass (ginkgo --procs $n, labels $labels)"
  "$CONF_DIR/ginkgo" "${args[@]}" "$CONF_DIR/e2e.test" -- \
    --provider=local --kubeconfig="$KUBECONFIG_FILE" --kubectl-path="$KUBECTL" \
    --report-dir="$REPORT_DIR" --report-prefix="${name}_" \
    >"$REPORT_DIR/$name.log" 2>&1 || rc=$?
  log "conformance: $name pass exited $rc (log $REPORT_DIR/$name.log)"
  grep -E '^(Ran [0-9]+ of|FAIL!|SUCCESS!|\[FAIL\]|  \[FAIL\]|.*SynchronizedBeforeSuite.*FAILED)' "$REPORT_DIR/$name.log" | head -n 40 >&2 || true
}

select_focus() {
  local sel=(select --conformance "$WORK/conformance.yaml" --serial="$1")
  [[ -z "$list" ]] || sel+=(--list "$list")
  [[ -z "$shard" ]] || sel+=(--shard "$shard")
  "$REPORT_TOOL" "${sel[@]}"
}
if [[ -n "$preflight" ]]; then
  log "conformance: pre-flight failed: $preflight"
elif [[ -n "$list" || -n "$shard" ]]; then
  parallel_focus=$(select_focus false)
  serial_focus=$(select_focus true)
  [[ -n "$parallel_focus" ]] && pass parallel "$procs" "($labels) && !Serial" "$parallel_focus"
  [[ -n "$serial_focus" ]] && pass serial 1 "($labels) && Serial" "$serial_focus"
else
  pass parallel "$procs" "($labels) && !Serial" "$focus"
  pass serial 1 "($labels) && Serial" "$focus"
fi

shopt -s nullglob
junit=("$REPORT_DIR"/junit_*.xml)
setup_args=()
[[ -z "$preflight" ]] || setup_args=(--setup-failure "$preflight")
if ((${#junit[@]} == 0)) && [[ -z "$preflight" ]]; then
  echo "conformance.sh: no JUnit report in $REPORT_DIR; e2e.test did not get to write one (see its logs there)" >&2
  exit 1
fi
doc_args=()
((doc == 0)) || doc_args=(--doc "$REPO_ROOT/docs/conformance.md")
require_args=()
[[ -z "$list" || -n "$shard" ]] || require_args=(--require "$list")
args_text="hack/conformance.sh"
[[ -z "$focus" ]] || args_text+=" --focus '$focus'"
[[ -z "$skip" ]] || args_text+=" --skip '$skip'"
[[ -z "$shard" ]] || args_text+=" --shard $shard"
[[ -z "$list" ]] || args_text+=" --list ${list#"$REPO_ROOT/"}"
report_rc=0
"$REPORT_TOOL" merge --conformance "$WORK/conformance.yaml" --results "$results" \
  --blocked "$REPO_ROOT/hack/conformance-blocked.txt" --discovery "$REPORT_DIR/api-resources.txt" "${doc_args[@]}" "${fresh[@]}" "${setup_args[@]}" "${require_args[@]}" \
  --run "$(date -u +%F)" --command "$args_text" "${junit[@]}" >"$REPORT_DIR/summary.txt" || report_rc=$?
cat "$REPORT_DIR/summary.txt"
echo "conformance: $(($(date +%s) - started)) s end to end; JUnit, logs and summary in $REPORT_DIR"
exit "$report_rc"
