package server

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/nspin"
)

// infralessConfig is a pod whose containers share no PID namespace, as
// the kubelet asks by default: it gets no pause container.
func infralessConfig(name string) *runtimeapi.PodSandboxConfig {
	cfg := sandboxConfig(name)
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
	}}
	return cfg
}

func (h *harness) runConfig(cfg *runtimeapi.PodSandboxConfig) (string, error) {
	cfg.LogDirectory = filepath.Join(h.t.TempDir(), "logs")
	resp, err := h.client.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	return resp.GetPodSandboxId(), err
}

func (h *harness) pinPaths(id string) []string {
	var out []string
	for _, t := range nspin.Types() {
		out = append(out, filepath.Join(h.stateDir, string(t)+"ns", id))
	}
	return out
}

// requireAbsent fails the test if any of paths exists; when says at which
// step they should have gone.
func requireAbsent(t *testing.T, paths []string, when string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s %s: %v", p, when, err)
		}
	}
}

func (h *harness) sandboxInfo(id string) map[string]any {
	h.t.Helper()
	st, err := h.client.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		h.t.Fatal(err)
	}
	info := map[string]any{"state": st.Status.State.String()}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil {
		h.t.Fatal(err)
	}
	return info
}

// hostnameIn runs hostname inside the UTS namespace pinned at path.
func hostnameIn(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("nsenter", "--uts="+path, "hostname").CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter --uts=%s hostname: %v: %s", path, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestInfralessSandboxLifecycle: a pod without a shared PID namespace runs
// no pause container; its net, UTS (with the pod's hostname) and IPC
// namespaces are pinned files its containers are given; stop releases them
// and the network, and remove may be repeated.
func TestInfralessSandboxLifecycle(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	cfg := infralessConfig("pod")
	sb, err := h.runConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.oci.task(sb); err == nil {
		t.Fatal("a pause container was created for a pod that needs none")
	}
	if h.images.inUse() != 0 {
		t.Fatalf("%d root filesystems prepared for a sandbox without a pause container", h.images.inUse())
	}
	for _, p := range h.pinPaths(sb) {
		if !nspin.IsPinned(p) {
			t.Fatalf("%s is not a pinned namespace", p)
		}
	}
	if got := hostnameIn(t, h.pinPaths(sb)[1]); got != "pod" {
		t.Fatalf("hostname in the pod's UTS namespace: %q, want pod", got)
	}
	info := h.sandboxInfo(sb)
	if info["state"] != "SANDBOX_READY" || info["pid"] != float64(0) || info["pause"] != false || info["utsns"] != h.pinPaths(sb)[1] || info["ipcns"] != h.pinPaths(sb)[2] {
		t.Fatalf("sandbox info: %v", info)
	}

	c := h.createContainer(sb, cfg, "c")
	h.startContainer(c)
	in := h.specs.lastIn
	if in.SandboxPid != 0 || in.NetNSPath != h.pinPaths(sb)[0] || in.UTSNSPath != h.pinPaths(sb)[1] || in.IPCNSPath != h.pinPaths(sb)[2] {
		t.Fatalf("container spec input: pid %d net %q uts %q ipc %q", in.SandboxPid, in.NetNSPath, in.UTSNSPath, in.IPCNSPath)
	}

	if _, err := h.client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if st := h.containerStatus(c); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("container after stop: %v", st.State)
	}
	if info := h.sandboxInfo(sb); info["state"] != "SANDBOX_NOTREADY" {
		t.Fatalf("state after stop: %v", info["state"])
	}
	if h.net.count() != 0 {
		t.Fatal("network still attached after stop")
	}
	requireAbsent(t, h.pinPaths(sb), "left after stop")
	for range 2 {
		if _, err := h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.stateDir, "sandboxes", sb)); !os.IsNotExist(err) {
		t.Fatalf("sandbox dir left: %v", err)
	}
}

// TestPodSharingPIDNamespaceGetsPauseProcess: pid=POD gets a pause process,
// whose PID namespace the containers join, born in the pod's pinned
// network, UTS and IPC namespaces, with no OCI bundle.
func TestPodSharingPIDNamespaceGetsPauseProcess(t *testing.T) {
	h := newHarness(t)
	cfg := infralessConfig("pod")
	cfg.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	sb, err := h.runConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	task, err := h.oci.task(sb)
	if err != nil || task.pause == nil {
		t.Fatalf("no pause process: task %v, err %v", task, err)
	}
	pins := h.pinPaths(sb)
	want := map[nspin.Type]string{nspin.Net: pins[0], nspin.UTS: pins[1], nspin.IPC: pins[2]}
	if !maps.Equal(task.pause.Namespaces, want) {
		t.Errorf("pause process joins %v, want the pinned %v", task.pause.Namespaces, want)
	}
	info := h.sandboxInfo(sb)
	if info["pid"] != float64(task.state.Pid) || info["pause"] != true || info["utsns"] != pins[1] || info["ipcns"] != pins[2] {
		t.Fatalf("sandbox info: %v", info)
	}
	requireAbsent(t, []string{h.srv.bundleDir(sb)}, "made for a pause process")

	resp, err := h.client.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: containerConfig("app"), SandboxConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c := resp.GetContainerId()
	in := h.specs.lastIn
	if in.SandboxPid != task.state.Pid || in.UTSNSPath != pins[1] || in.IPCNSPath != pins[2] || in.SysctlsSet {
		t.Errorf("container %s's spec input: pid %d, uts %q, ipc %q, sysctls set %v", c, in.SandboxPid, in.UTSNSPath, in.IPCNSPath, in.SysctlsSet)
	}
}

// TestInfralessHostNamespacesPinOnlyWhatIsTheirs: host network means the
// host's UTS too, host IPC the host's IPC: nothing is pinned at all.
func TestInfralessHostNamespacesPinOnlyWhatIsTheirs(t *testing.T) {
	h := newHarness(t)
	cfg := infralessConfig("pod")
	cfg.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE,
	}
	sb, err := h.runConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	requireAbsent(t, h.pinPaths(sb), "pinned for a host-namespace pod")
	c := h.createContainer(sb, cfg, "c")
	h.startContainer(c)
	if in := h.specs.lastIn; in.NetNSPath != "" || in.UTSNSPath != "" || in.IPCNSPath != "" {
		t.Fatalf("container spec input: %+v", in)
	}
}

// TestInfralessBadSandboxCreatesNothing: a config the spec layer rejects
// (bad sysctl, hostname) fails with InvalidArgument before anything exists.
func TestInfralessBadSandboxCreatesNothing(t *testing.T) {
	h := newHarness(t)
	cfg := infralessConfig("pod")
	cfg.Annotations["invalid"] = "sysctl"
	_, err := h.runConfig(cfg)
	wantCode(t, err, codes.InvalidArgument)
	for _, dir := range []string{"netns", "utsns", "ipcns", "sandboxes"} {
		entries, _ := os.ReadDir(filepath.Join(h.stateDir, dir))
		if len(entries) != 0 {
			t.Fatalf("%s left in %s", entries[0].Name(), dir)
		}
	}
	// The name is free again.
	delete(cfg.Annotations, "invalid")
	if _, err := h.runConfig(cfg); err != nil {
		t.Fatal(err)
	}
}

// TestRestartRecoversInfralessSandbox: with no pause process to check, a
// recovered sandbox is ready while its pinned namespaces are there, and
// not ready once one is lost.
func TestRestartRecoversInfralessSandbox(t *testing.T) {
	h := newHarness(t)
	cfg := infralessConfig("pod")
	sb, err := h.runConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lost, err := h.runConfig(infralessConfig("lost"))
	if err != nil {
		t.Fatal(err)
	}
	c := h.createContainer(sb, cfg, "c")
	h.startContainer(c)
	h.stop()
	if err := nspin.Unpin(h.pinPaths(lost)[2]); err != nil { // a stray umount of its IPC namespace
		t.Fatal(err)
	}
	h.start()
	if info := h.sandboxInfo(sb); info["state"] != "SANDBOX_READY" || info["utsns"] != h.pinPaths(sb)[1] {
		t.Fatalf("recovered sandbox: %v", info)
	}
	if st := h.containerStatus(c); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("recovered container: %v", st.State)
	}
	if info := h.sandboxInfo(lost); info["state"] != "SANDBOX_NOTREADY" {
		t.Fatalf("sandbox without its IPC namespace: %v", info)
	}
	// Both are stopped and removed as usual.
	for _, id := range []string{sb, lost} {
		if _, err := h.client.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
		requireAbsent(t, h.pinPaths(id), "left after remove")
	}
}

// TestRestartReleasesHalfCreatedInfralessSandbox: a crash in the middle of
// RunPodSandbox leaves a NOTREADY record and pinned namespaces; recovery
// unpins them and gives back the network.
func TestRestartReleasesHalfCreatedInfralessSandbox(t *testing.T) {
	h := newHarness(t)
	sb, err := h.runConfig(infralessConfig("pod"))
	if err != nil {
		t.Fatal(err)
	}
	h.stop()
	// What the record says before RunPodSandbox's last step.
	file := filepath.Join(h.stateDir, "sandboxes", sb+".json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["state"] = float64(runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
	for _, k := range []string{"netns", "utsns", "ipcns"} {
		delete(rec, k)
	}
	if data, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()
	requireAbsent(t, h.pinPaths(sb), "left after recovery")
	if h.net.count() != 0 {
		t.Fatal("network of the half-created sandbox still attached")
	}
	if info := h.sandboxInfo(sb); info["state"] != "SANDBOX_NOTREADY" {
		t.Fatalf("half-created sandbox: %v", info)
	}
}

// TestConcurrentRemovesOfInfralessSandbox: racing stops and removes all
// succeed and leave no pinned namespace.
func TestConcurrentRemovesOfInfralessSandbox(t *testing.T) {
	h := newHarness(t)
	cfg := infralessConfig("pod")
	sb, err := h.runConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.createContainer(sb, cfg, "c")
	h.stopAndRemoveConcurrently(sb, 8)
	requireAbsent(t, h.pinPaths(sb), "left after concurrent stops and removes")
}

// TestInfralessPodNetworkMetrics: the pod's interface counters are read
// inside its pinned network namespace, with no pause process to read them
// through.
func TestInfralessPodNetworkMetrics(t *testing.T) {
	h := newHarness(t)
	sb, err := h.runConfig(infralessConfig("pod"))
	if err != nil {
		t.Fatal(err)
	}
	netns := h.pinPaths(sb)[0]
	if out, err := exec.Command("nsenter", "--net="+netns, "ip", "link", "add", "berthtest0", "type", "veth", "peer", "name", "berthtest1").CombinedOutput(); err != nil {
		t.Fatalf("add a veth pair in the pod: %v: %s", err, out)
	}
	resp, err := h.client.ListPodSandboxMetrics(context.Background(), &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var seen bool
	for _, pm := range resp.PodMetrics {
		for _, m := range pm.Metrics {
			if pm.PodSandboxId == sb && m.Name == "container_network_receive_bytes_total" && strings.Contains(strings.Join(m.LabelValues, ","), "berthtest0") {
				seen = true
			}
		}
	}
	if !seen {
		t.Fatalf("no network metrics of the pod's own interface: %v", resp.PodMetrics)
	}
}

// TestInfralessFailedNetworkUndoesEverything: when CNI fails, the pinned
// namespaces, the record and the name are all given back.
func TestInfralessFailedNetworkUndoesEverything(t *testing.T) {
	h := newHarness(t)
	h.net.fail = errors.New("no addresses left")
	_, err := h.runConfig(infralessConfig("pod"))
	wantCode(t, err, codes.Internal)
	h.net.fail = nil
	for _, dir := range []string{"netns", "utsns", "ipcns", "sandboxes"} {
		entries, _ := os.ReadDir(filepath.Join(h.stateDir, dir))
		if len(entries) != 0 {
			t.Fatalf("%s left in %s after a failed RunPodSandbox", entries[0].Name(), dir)
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(mounts), h.stateDir) {
		t.Fatalf("mounts left under the state dir (%v)", err)
	}
	if _, err := h.runConfig(infralessConfig("pod")); err != nil {
		t.Fatal(err)
	}
}
