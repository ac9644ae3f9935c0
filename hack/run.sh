#!/usr/bin/env bash
# The README's run command: builds berth, starts a single-node cluster
# (`berth server` with its own runtime and agent), loads the example images
# it builds locally into the runtime and runs the example pod — all offline —
# then keeps the cluster in the foreground until Ctrl-C.
#
# Arguments go to `berth server`. Environment: BERTH_DATA_DIR (default
# /var/lib/berth), BERTH_SOCKET_DIR (/run/berth), BERTH_PORT (6443);
# BERTH_SMOKE=1 stops the cluster once the example has been shown (CI).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$REPO_ROOT/hack/setup.sh"
cd "$REPO_ROOT"

DATA_DIR=${BERTH_DATA_DIR:-/var/lib/berth}
SOCKET_DIR=${BERTH_SOCKET_DIR:-/run/berth}
PORT=${BERTH_PORT:-6443}
IMAGES="$OUT_DIR/images/examples.tar"
KUBECONFIG_FILE="$DATA_DIR/admin.kubeconfig"

log "building the example images (busybox-static and a static pause, no registry needed)"
go run ./hack/exampleimages --out "$IMAGES"

log "starting berth server (data in $DATA_DIR, API on port $PORT)"
"$BERTH_BIN" server --data-dir "$DATA_DIR" --socket-dir "$SOCKET_DIR" --port "$PORT" \
  --pause-image localhost/berth/pause:1 "$@" &
server_pid=$!
stop_server() {
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid"
  fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

kubectl() { "$BERTH_BIN" kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }
server_alive() { kill -0 "$server_pid" 2>/dev/null || { echo "berth server exited" >&2; exit 1; }; }

# Wait (bounded) for the node to register; `kubectl wait` needs it to exist.
for _ in $(seq 180); do
  server_alive
  [[ -n "$(kubectl get nodes -o name 2>/dev/null)" ]] && break
  sleep 1
done
kubectl wait --for=condition=Ready node --all --timeout=180s

log "importing the example images into the node's runtime"
"$BERTH_BIN" image import --runtime-endpoint "unix://$SOCKET_DIR/runtime.sock" "$IMAGES"

log "running the example pod (examples/hello.yaml)"
kubectl apply -f examples/hello.yaml
kubectl wait --for=condition=Ready pod/hello --timeout=180s
kubectl get nodes,pods -o wide
log "logs of pod/hello"
kubectl logs hello

if [[ "${BERTH_SMOKE:-}" == 1 ]]; then
  log "smoke run: removing the example and stopping the cluster"
  kubectl delete pod hello --timeout=120s
  # Pods outlive the server by design; a smoke run leaves nothing behind.
  "$TOOLS_DIR/crictl" --runtime-endpoint "unix://$SOCKET_DIR/runtime.sock" rmp -fa
  exit 0
fi
log "the cluster is up: $BERTH_BIN kubectl get pods (KUBECONFIG $KUBECONFIG_FILE); Ctrl-C stops it"
wait "$server_pid"
