#!/usr/bin/env bash
# The footprint a change must report: each executable's size, the idle RSS of
# `berth server --disable-agent` (an embedded etcd, no node), as root the
# idle RSS of a node's `berth runtime` and `berth agent` (joined to that
# server, no pods), and the peak RSS of `berth kubectl version --client`.
#
#   hack/footprint.sh [OUTDIR]   # OUTDIR holds built binaries (default: build into _output)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
out=${1:-}
if [[ -z "$out" ]]; then
  out=$REPO_ROOT/_output
  "$REPO_ROOT/hack/build.sh" "$out"
fi
for bin in berth berth-agent berth-kubectl berth-runtime berth-monitor; do
  if [[ -e "$out/$bin" ]]; then
    printf '%-14s %12d bytes\n' "$bin" "$(stat -c %s "$out/$bin")"
  else
    printf '%-14s %12s\n' "$bin" "(none: built before it existed)"
  fi
done

dir=$(mktemp -d /tmp/berth-footprint.XXXXXX)
pids=()
stop_all() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  # In an || list errexit is off: remove_scratch's grep finding no mounts
  # (no runtime ran) must not stop it before it removes the directory.
  remove_scratch "$dir" || true
}
trap stop_all EXIT
# rss PID: resident KiB, and in parentheses the anonymous part, which,
# unlike the executable's file pages, memory pressure from other work on
# the machine does not shrink.
rss() { awk '/^VmRSS/ {r=$2} /^RssAnon/ {a=$2} END {printf "%6d KiB (anon %6d KiB)", r, a}' "/proc/$1/status"; }
kubectl() { "$out/berth" kubectl --kubeconfig "$dir/data/admin.kubeconfig" "$@"; }
# wait_for WHAT LOG CMD...: up to 60 s for CMD to succeed.
wait_for() {
  local what=$1 logfile=$2
  shift 2
  for _ in $(seq 1 120); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "$what was not ready within 60s; its log:"
  tail -20 "$logfile"
  exit 1
}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$out/berth" server --disable-agent --data-dir "$dir/data" --bind-address 127.0.0.1 --port "$port" >"$dir/server.log" 2>&1 &
server=$!
pids+=("$server")
wait_for "berth server" "$dir/server.log" kubectl get --raw /readyz

# A node: berth runtime with a CNI configuration directory of its own (no
# network is set up: no pods run) and berth agent with the admin kubeconfig.
# `berth runtime` and `berth agent` exec their companions in their own
# place (same PID), so the PIDs started here are the daemons'.
runtime="" agent=""
if ((EUID == 0)) && have runc; then
  endpoint="unix://$dir/run/runtime.sock"
  mkdir -p "$dir/run" "$dir/cni"
  "$out/berth" runtime --root "$dir/runtime" --state-dir "$dir/runtime-state" --listen "$endpoint" \
    --cni-conf-dir "$dir/cni" --disable-nri >"$dir/runtime.log" 2>&1 &
  runtime=$!
  pids+=("$runtime")
  wait_for "berth runtime" "$dir/runtime.log" test -S "$dir/run/runtime.sock"
  "$out/berth" agent --kubeconfig "$dir/data/admin.kubeconfig" --node-name berth-footprint --node-ip 127.0.0.1 \
    --data-dir "$dir/agent" --runtime-endpoint "$endpoint" --port 0 --host-gw-routes=false >"$dir/agent.log" 2>&1 &
  agent=$!
  pids+=("$agent")
  wait_for "berth agent" "$dir/agent.log" kubectl get node berth-footprint
fi

# Idle: the start-up work (RBAC bootstrap, caches filled, first GC) is over.
sleep 30
printf '%-34s %s\n' "berth server --disable-agent, idle" "$(rss "$server")"
if [[ -n "$agent" ]]; then
  printf '%-34s %s\n' "berth runtime, idle (no pods)" "$(rss "$runtime")"
  printf '%-34s %s\n' "berth agent, idle (no pods)" "$(rss "$agent")"
else
  echo "berth runtime and berth agent: not measured (needs root and runc)"
fi
peak=$( { /usr/bin/time -f %M "$out/berth" kubectl version --client >/dev/null; } 2>&1 )
printf '%-34s %6d KiB\n' "berth kubectl version --client" "$peak"
