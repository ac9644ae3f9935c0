#!/usr/bin/env bash
# Pulls and runs every image hack/testregistry --conformance serves through a
# throwaway `berth runtime`, with crictl, and checks what each one prints or
# serves: the quick proof that the conformance images are real, runnable
# images under their upstream names. Prints one OK/FAIL line per check and
# exits non-zero if any failed.
# Needs root, hack/setup.sh and hack/build-conformance.sh (for agnhost).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

if ((EUID != 0)); then echo "conformance-images.sh: must run as root" >&2; exit 1; fi
for bin in "$BERTH_BIN" "$OUT_DIR/berth-runtime" "$OUT_DIR/berth-monitor" "$TOOLS_DIR/crictl" "$OUT_DIR/conformance/agnhost"; do
  [[ -x "$bin" ]] || { echo "conformance-images.sh: $bin missing; run hack/setup.sh and hack/build-conformance.sh" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/berth-conformance-images.XXXXXX)
chmod 711 "$WORK"
SOCK="$WORK/runtime.sock"
: >"$WORK/crictl.yaml"
crictl() { "$TOOLS_DIR/crictl" --config "$WORK/crictl.yaml" --runtime-endpoint "unix://$SOCK" --image-endpoint "unix://$SOCK" --timeout 120s "$@"; }
registry_pid="" runtime_pid=""

cleanup() {
  local rc=$?
  set +e
  if [[ -n "$runtime_pid" ]] && kill -0 "$runtime_pid" 2>/dev/null; then
    crictl rmp -fa >/dev/null 2>&1
    kill -TERM "$runtime_pid"
    wait "$runtime_pid" 2>/dev/null
  fi
  stop_test_registry
  remove_scratch "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_test_registry conformance "$WORK" || exit 1
"$BERTH_BIN" runtime --root "$WORK/root" --state-dir "$WORK/state" --listen "unix://$SOCK" --disable-nri \
  --pause-image registry.k8s.io/pause:3.10.2 --insecure-registry "$REGISTRY" \
  --registry-mirror "registry.k8s.io=http://$REGISTRY" --registry-mirror "gcr.io=http://$REGISTRY" \
  --registry-mirror "docker.io=http://$REGISTRY" >"$WORK/runtime.log" 2>&1 &
runtime_pid=$!
for _ in $(seq 60); do [[ -S "$SOCK" ]] && break; sleep 1; done
[[ -S "$SOCK" ]] || { cat "$WORK/runtime.log" >&2; echo "conformance-images.sh: runtime socket never appeared" >&2; exit 1; }

failed=0 n=0
# check NAME IMAGE COMMAND_JSON EXEC WANT: runs IMAGE in a pod of its own (its
# own command if COMMAND_JSON is empty), then reads EXEC's output inside it,
# or the container's log if EXEC is empty, until it holds WANT (60 s at most).
check() {
  local name=$1 image=$2 cmd=$3 ex=$4 want=$5 cid out="" state
  n=$((n + 1))
  printf '{"metadata":{"name":"%s","namespace":"images","uid":"uid-%d"},"log_directory":"%s","linux":{}}\n' \
    "$name" "$n" "$WORK/logs$n" >"$WORK/pod$n.json"
  printf '{"metadata":{"name":"c"},"image":{"image":"%s"},%s"log_path":"c.log","linux":{}}\n' \
    "$image" "${cmd:+\"command\":$cmd,}" >"$WORK/ctr$n.json"
  if ! crictl pull "$image" >/dev/null 2>"$WORK/err"; then
    echo "FAIL $name: pull $image: $(cat "$WORK/err")"; failed=$((failed + 1)); return
  fi
  if ! cid=$(crictl run --no-pull "$WORK/ctr$n.json" "$WORK/pod$n.json" 2>"$WORK/err"); then
    echo "FAIL $name: run $image: $(cat "$WORK/err")"; failed=$((failed + 1)); return
  fi
  for _ in $(seq 60); do
    if [[ -n "$ex" ]]; then out=$(crictl exec "$cid" sh -c "$ex" 2>&1) || true; else out=$(crictl logs "$cid" 2>&1) || true; fi
    grep -qF -- "$want" <<<"$out" && break
    sleep 1
  done
  state=$(crictl inspect -o go-template --template '{{.status.state}}' "$cid" 2>&1) || true
  if grep -qF -- "$want" <<<"$out"; then
    echo "OK   $name $image ($state): $(tr '\n' ' ' <<<"$out" | cut -c1-150)"
  else
    echo "FAIL $name $image ($state): want \"$want\", got: $out"; failed=$((failed + 1))
  fi
}

E2E=registry.k8s.io/e2e-test-images
check agnhost-tools "$E2E/agnhost:2.66.1" \
  '["sh","-c","curl --version | head -n 1; bash -c \"echo bash-ok\"; id user-defined-in-image; ls -l /agnhost-2; sleep 600"]' \
  "" "50000(group-defined-in-image)"
check agnhost-netexec "$E2E/agnhost:2.66.1" '["/agnhost","netexec","--http-port=8080"]' \
  "wget -q -O - 'http://127.0.0.1:8080/echo?msg=netexec-ok'" "netexec-ok"
check agnhost-prev "$E2E/agnhost:2.55" "" "ps" "/agnhost pause"
check kitten "$E2E/kitten:1.8" "" "wget -q -O - http://127.0.0.1:80/data.json" "kitten.jpg"
check nautilus "$E2E/nautilus:1.8" "" "wget -q -O - http://127.0.0.1:80/data.json" "nautilus.jpg"
check glibc-dns-testing "$E2E/glibc-dns-testing:2.1.1" '["sh","-c","dig -v; getent passwd user-defined-in-image && echo getent-ok; sleep 600"]' "" "getent-ok"
check busybox "$E2E/busybox:1.37.0-2" '["sh","-c","echo busybox-ok; sleep 600"]' "" "busybox-ok"
# envFrom's variables need not be shell identifiers: sh must pass them on.
# (/bin/sh by path: busybox's env runs its own sh applet for a bare "sh".)
check busybox-env "$E2E/busybox:1.37.0-2" '["env","data-1=kept","/bin/sh","-c","env; sleep 600"]' "" "data-1=kept"
check nginx "$E2E/nginx:1.27.0-2" "" "wget -q -O - http://127.0.0.1:80/" "Welcome to nginx"
check nginx-new "$E2E/nginx:1.28.0-2" "" "wget -q -O - http://127.0.0.1:80/" "Welcome to nginx"
check nonewprivs "$E2E/nonewprivs:1.4" "" "" "Effective uid: 0"
check nonroot "$E2E/nonroot:1.5" '["sh","-c","echo uid=$(id -u); sleep 600"]' "" "uid=1234"
check pause registry.k8s.io/pause:3.10.2 "" "" "pause should be the first process"
echo "conformance-images: $((n - failed)) of $n checks passed"
((failed == 0))
