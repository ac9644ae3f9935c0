package server_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/runtimetest"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
)

// monitor is the berth-monitor binary the real runtime of the e2e tests
// execs; runtimetest.Main builds it once for the whole test binary.
var monitor string

func TestMain(m *testing.M) { runtimetest.Main(m, &monitor) }

// view is what one container sees of its namespaces, one line each.
func view(t *testing.T, r *runtimetest.Runtime, id string, paths ...string) map[string]string {
	t.Helper()
	script := "hostname; for f in /proc/self/ns/uts /proc/self/ns/ipc /proc/self/ns/net /proc/self/ns/pid; do readlink $f; done; cat /proc/1/comm"
	for _, p := range paths {
		script += "; cat " + p
	}
	resp, err := r.Client.Runtime.ExecSync(t.Context(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", script}, Timeout: 30})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("exec in %s: %v (exit %d, stderr %s)", id, err, resp.GetExitCode(), resp.GetStderr())
	}
	lines := strings.Split(strings.TrimSpace(string(resp.Stdout)), "\n")
	keys := append([]string{"hostname", "uts", "ipc", "net", "pid", "pid1"}, paths...)
	if len(lines) != len(keys) {
		t.Fatalf("exec in %s printed %q", id, lines)
	}
	out := map[string]string{}
	for i, k := range keys {
		out[k] = lines[i]
	}
	return out
}

func sandboxInfo(t *testing.T, r *runtimetest.Runtime, id string) map[string]any {
	t.Helper()
	st, err := r.Client.Runtime.PodSandboxStatus(t.Context(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	info := map[string]any{}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil {
		t.Fatal(err)
	}
	return info
}

func hostNS(t *testing.T, ns string) string {
	t.Helper()
	link, err := os.Readlink("/proc/self/ns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// TestInfralessPodUnderRunc runs a pod without a pause container through
// the real runtime (runc, berth-monitor, CNI): its two containers share
// the pod's hostname, UTS, IPC and network namespaces (none the host's),
// have PID namespaces of their own, and see the pod's sysctls; a pod with
// a shared PID namespace still runs its containers under the pause process.
func TestInfralessPodUnderRunc(t *testing.T) {
	r := runtimetest.Start(t, monitor)
	r.Pull(t, images.Busybox)
	sysctls := map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_unprivileged_port_start": "81"}
	p := runPod(t, r, "solo", runtimeapi.NamespaceMode_CONTAINER, sysctls)
	if info := sandboxInfo(t, r, p.id); info["pid"] != float64(0) || info["pause"] != false {
		t.Fatalf("sandbox info of a pod without pause: %v", info)
	}
	sysctlFiles := []string{"/proc/sys/kernel/shm_rmid_forced", "/proc/sys/net/ipv4/ip_unprivileged_port_start"}
	a := view(t, r, p.sleeper(t, "a"), sysctlFiles...)
	b := view(t, r, p.sleeper(t, "b"), sysctlFiles...)
	if a["hostname"] != "solo-host" || b["hostname"] != "solo-host" {
		t.Errorf("hostnames %q and %q, want solo-host", a["hostname"], b["hostname"])
	}
	for _, ns := range []string{"uts", "ipc", "net"} {
		if a[ns] != b[ns] || a[ns] == hostNS(t, ns) {
			t.Errorf("%s namespaces: %s and %s (host %s), want one of the pod's own", ns, a[ns], b[ns], hostNS(t, ns))
		}
	}
	if a["pid"] == b["pid"] || a["pid1"] != "sleep" {
		t.Errorf("PID namespaces %s and %s, PID 1 %q: want each container's own, run by sleep", a["pid"], b["pid"], a["pid1"])
	}
	for _, v := range []map[string]string{a, b} {
		if v[sysctlFiles[0]] != "1" || v[sysctlFiles[1]] != "81" {
			t.Errorf("sysctls seen in a container: %v", v)
		}
	}

	shared := runPod(t, r, "shared", runtimeapi.NamespaceMode_POD, nil)
	if info := sandboxInfo(t, r, shared.id); info["pid"] == float64(0) || info["pause"] != true {
		t.Fatalf("sandbox info of a pod sharing its PID namespace: %v", info)
	}
	if v := view(t, r, shared.sleeper(t, "c")); v["pid1"] != "pause" || v["hostname"] != "shared-host" || v["ipc"] == a["ipc"] {
		t.Errorf("container of the shared-PID pod sees %v", v)
	}

	for _, id := range []string{p.id, shared.id} {
		if _, err := r.Client.Runtime.StopPodSandbox(t.Context(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Client.Runtime.RemovePodSandbox(t.Context(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if left := cri.MountsUnder(r.Dir); len(left) > 0 {
		t.Errorf("mounts left after removing both pods: %v", left)
	}
}
