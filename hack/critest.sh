#!/usr/bin/env bash
# CRI conformance: critest (cri-tools, pinned in lib.sh) against a throwaway
# `berth runtime`, with every image critest pulls served offline on loopback by
# hack/testregistry. Fails if any spec fails; the one spec that cannot pass
# offline is skipped by name (see docs/conformance.md).
# Needs root, and hack/setup.sh to have run (berth, berth-runtime, berth-monitor, critest, crictl).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

# Pulls a public image by a digest of the real upstream registry, which an
# offline mirror cannot serve. Ginkgo regexp against the spec's full text.
OFFLINE_SKIP='\[k8s\.io\] Image Manager public image with digest should be pulled and removed'
MIRRORED_HOSTS=(gcr.io registry.k8s.io k8s.gcr.io public.ecr.aws)

if ((EUID != 0)); then echo "critest.sh: must run as root" >&2; exit 1; fi
for bin in "$BERTH_BIN" "$OUT_DIR/berth-runtime" "$OUT_DIR/berth-monitor" "$TOOLS_DIR/critest" "$TOOLS_DIR/crictl"; do
  [[ -x "$bin" ]] || { echo "critest.sh: $bin missing; run hack/setup.sh" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/berth-critest.XXXXXX)
# Traversable, as /var/lib is: the root of a user-namespaced pod is a host
# user of its own and must reach its files below.
chmod 711 "$WORK"
SOCK="$WORK/runtime.sock"
ENDPOINT="unix://$SOCK"
REPORT="${CRITEST_REPORT:-$WORK/junit.xml}"
registry_pid="" runtime_pid=""

# Shared-memory segment ids on the host, one per line.
shm_ids() { ipcs -m 2>/dev/null | awk '$2 ~ /^[0-9]+$/ {print $2}' | sort; }
SHM_BEFORE=$(shm_ids)

cleanup() {
  local rc=$?
  set +e
  if [[ -n "$runtime_pid" ]] && kill -0 "$runtime_pid" 2>/dev/null; then
    "$TOOLS_DIR/crictl" --runtime-endpoint "$ENDPOINT" --timeout 30s rmp -fa >/dev/null 2>&1
    kill -TERM "$runtime_pid"
    wait "$runtime_pid" 2>/dev/null
  fi
  stop_test_registry
  # critest's HostIpc specs create segments in the host IPC namespace.
  comm -13 <(echo "$SHM_BEFORE") <(shm_ids) | while read -r id; do [[ -n "$id" ]] && ipcrm -m "$id"; done
  remove_scratch "$WORK"
  exit "$rc"
}
trap cleanup EXIT INT TERM

log "critest: starting the offline test registry"
start_test_registry critest "$WORK" || exit 1

log "critest: starting berth runtime on $ENDPOINT (images from $REGISTRY)"
mirrors=()
for host in "${MIRRORED_HOSTS[@]}"; do mirrors+=(--registry-mirror "$host=http://$REGISTRY"); done
# A private NRI socket: critest's NRI specs connect their plugins to it, and
# no other runtime on the machine can capture them.
NRI_SOCK="$WORK/nri.sock"
"$BERTH_BIN" runtime --root "$WORK/root" --state-dir "$WORK/state" --listen "$ENDPOINT" \
  --nri-socket "$NRI_SOCK" "${mirrors[@]}" --insecure-registry "$REGISTRY" >"$WORK/runtime.log" 2>&1 &
runtime_pid=$!
for _ in $(seq 60); do
  [[ -S "$SOCK" ]] && break
  kill -0 "$runtime_pid" 2>/dev/null || { cat "$WORK/runtime.log" >&2; exit 1; }
  sleep 1
done
[[ -S "$SOCK" ]] || { echo "critest.sh: runtime socket never appeared" >&2; exit 1; }

log "critest: running $CRI_TOOLS_VERSION"
# Flake attempts ride out timing noise on a loaded 2-core machine; a spec that
# fails every attempt still fails the run.
critest_rc=0
"$TOOLS_DIR/critest" --runtime-endpoint "$ENDPOINT" --image-endpoint "$ENDPOINT" \
  --nri-socket "$NRI_SOCK" --ginkgo.junit-report "$REPORT" --ginkgo.skip "$OFFLINE_SKIP" \
  --ginkgo.flake-attempts 2 --ginkgo.timeout 20m || critest_rc=$?

summary=$(python3 - "$REPORT" <<'EOF'
# Count specs by their Ginkgo status. Suite-level nodes ([BeforeSuite], ...)
# are not specs, but still count when they fail.
import sys, xml.etree.ElementTree as ET
counts = {"passed": 0, "failed": 0, "skipped": 0}
for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    status = tc.get("status") or ("failed" if tc.find("failure") is not None else "passed")
    if status in ("skipped", "pending"):
        status = "skipped"
    elif status != "passed":
        status = "failed"
    name = tc.get("name", "")
    if name.startswith("[") and "Suite]" in name and status != "failed":
        continue
    counts[status] += 1
print("critest: {passed} passed, {failed} failed, {skipped} skipped".format(**counts))
EOF
) || summary="critest: no readable junit report at $REPORT"
echo "$summary"
if ((critest_rc != 0)) || [[ "$summary" != *" 0 failed,"* ]]; then
  echo "critest.sh: conformance FAILED (critest exit $critest_rc); runtime log tail:" >&2
  tail -n 50 "$WORK/runtime.log" >&2
  exit 1
fi
