package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/runtimetest"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/usernstest"
)

// usernsHostID is where the test pod's IDs start on the host: the
// kubelet's ranges are multiples of 65536 from 65536 up.
const usernsHostID = 6 * 65536

// TestUserNamespacedPodUnderRunc runs a pod with a user namespace of its
// own (the kubelet's hostUsers: false) through the real runtime: its
// containers' root is a host ID of the pod's range, owns the image's
// files (idmapped layers) and its root filesystem, and shares the pod's
// user, network, UTS, IPC and PID namespaces, none the host's; the pause
// process runs inside it too; removing the pod leaves nothing behind.
func TestUserNamespacedPodUnderRunc(t *testing.T) {
	r := runtimetest.Start(t, monitor)
	ctx := t.Context()
	st, err := r.Client.Runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.GetRuntimeHandlers()[0].GetFeatures().GetUserNamespaces() {
		t.Fatal("Status does not offer user namespaces on this host")
	}
	image := r.Pull(t, images.Busybox)
	mapping := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: usernsHostID, Length: 65536}}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "userns", Namespace: "default", Uid: "uid-userns"},
		Hostname:     "userns-host",
		LogDirectory: t.TempDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{
				UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping, Gids: mapping},
			},
		}},
	}
	resp, err := r.Client.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	p := pod{r: r, id: resp.PodSandboxId, cfg: cfg}
	pausePid := int(sandboxInfo(t, r, p.id)["pid"].(float64))
	pauseMap, err := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pausePid))
	if err != nil || strings.Fields(string(pauseMap))[1] != fmt.Sprint(usernsHostID) {
		t.Errorf("pause process's uid_map: %q, %v", pauseMap, err)
	}
	// The pause process runs as the pod's 65535 (host ID 458751 here), with
	// no capabilities and no way to gain any.
	pauseStatus, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pausePid))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("Uid:\t%d\t", usernsHostID+65535), "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(string(pauseStatus), want) {
			t.Errorf("pause process status lacks %q:\n%s", want, pauseStatus)
		}
	}
	sbStatus, err := r.Client.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.id})
	if err != nil || sbStatus.GetStatus().GetNetwork().GetIp() == "" {
		t.Errorf("pod network: %v, %v", sbStatus.GetStatus().GetNetwork(), err)
	}

	files := []string{"/proc/self/uid_map", "/proc/self/gid_map"}
	sees := func(id string) map[string]string {
		out := view(t, r, id, files...)
		script := "id -u; stat -c %u:%g /bin/busybox; touch /made-by-root && stat -c %u /made-by-root; readlink /proc/self/ns/user; cat /sys/class/net/lo/operstate; test -e /sys/class/net/eth0 && echo eth0"
		resp, err := r.Client.Runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", script}, Timeout: 30})
		if err != nil || resp.ExitCode != 0 {
			t.Fatalf("exec in %s: %v (exit %d, stderr %s)", id, err, resp.GetExitCode(), resp.GetStderr())
		}
		lines := strings.Split(strings.TrimSpace(string(resp.Stdout)), "\n")
		for i, k := range []string{"uid", "busybox owner", "new file owner", "user", "lo", "eth0"} {
			if i < len(lines) {
				out[k] = lines[i]
			}
		}
		return out
	}
	a, b := sees(p.sleeper(t, "a")), sees(p.sleeper(t, "b"))
	want := map[string]string{
		"hostname": "userns-host", "pid1": "pause", "uid": "0", "busybox owner": "0:0", "new file owner": "0",
		"lo": "unknown", "eth0": "eth0",
	}
	for _, v := range []map[string]string{a, b} {
		for k, w := range want {
			if v[k] != w {
				t.Errorf("%s: %q, want %q (all: %v)", k, v[k], w, v)
			}
		}
		for _, f := range files {
			if got := strings.Fields(v[f]); len(got) != 3 || got[0] != "0" || got[1] != fmt.Sprint(usernsHostID) || got[2] != "65536" {
				t.Errorf("%s: %q, want 0 %d 65536", f, v[f], usernsHostID)
			}
		}
	}
	for _, ns := range []string{"user", "uts", "ipc", "net", "pid"} {
		if a[ns] != b[ns] || a[ns] == hostNS(t, ns) {
			t.Errorf("%s namespaces %s and %s (host %s): want the pod's own, shared", ns, a[ns], b[ns], hostNS(t, ns))
		}
	}
	// On the host, what the container's root made belongs to the pod's
	// first host ID; the image's own files still belong to the host's root.
	made := findOwned(t, r.Dir, "made-by-root")
	if made != usernsHostID {
		t.Errorf("/made-by-root is owned by host user %d, want %d", made, usernsHostID)
	}

	// A volume with the pod's mappings (as the kubelet sends every volume
	// of such a pod) is idmapped: the host's root owns it inside, and what
	// the pod's root writes there belongs to the host's root.
	vol := t.TempDir()
	if err := os.WriteFile(filepath.Join(vol, "by-host-root"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mount := &runtimeapi.Mount{HostPath: vol, ContainerPath: "/vol", UidMappings: mapping, GidMappings: mapping}
	v := p.start(t, "v", mount)
	out := execIn(t, r, v, "stat -c %u:%g /vol/by-host-root; cat /vol/by-host-root; echo y > /vol/by-pod-root")
	if out != "0:0\nx\n" {
		t.Errorf("inside the idmapped volume: %q, want the host root's file as 0:0 and readable", out)
	}
	if uid, _ := usernstest.Owner(t, filepath.Join(vol, "by-pod-root")); uid != 0 {
		t.Errorf("the pod's root wrote a file owned by host user %d, want 0", uid)
	}
	if left, _ := filepath.Glob(filepath.Join(r.Dir, "state", "idmapped", "*")); len(left) > 0 {
		t.Errorf("idmapped clones still attached after the start: %v", left)
	}
	other := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: usernsHostID + 65536, Length: 65536}}
	_, err = r.Client.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: p.id, SandboxConfig: cfg,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "w"}, Image: &runtimeapi.ImageSpec{Image: image},
			Command: []string{"true"}, Mounts: []*runtimeapi.Mount{{HostPath: vol, ContainerPath: "/vol", UidMappings: other, GidMappings: other}}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("volume with another pod's mappings: %v, want InvalidArgument", err)
	}

	// After a restart the pod is recovered ready, in the same namespaces,
	// and takes new containers.
	r.Restart(t)
	if st, err := r.Client.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.id}); err != nil || st.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("pod after a restart: %v, %v", st.GetStatus(), err)
	}
	if c := sees(p.sleeper(t, "c")); c["user"] != a["user"] || c["net"] != a["net"] || c["new file owner"] != "0" || c["busybox owner"] != "0:0" {
		t.Errorf("container started after a restart sees %v, want the pod's namespaces as %v", c, a)
	}

	if _, err := r.Client.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.id}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Client.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.id}); err != nil {
		t.Fatal(err)
	}
	if left := cri.MountsUnder(r.Dir); len(left) > 0 {
		t.Errorf("mounts left after removing the pod: %v", left)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "state", "userns", p.id)); !os.IsNotExist(err) {
		t.Errorf("the pod's pinned user namespace is still there: %v", err)
	}
}

// findOwned is the host owner of the first file named name below dir
// (a container's upper directory), or -1.
func findOwned(t *testing.T, dir, name string) int {
	t.Helper()
	owner := -1
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || owner >= 0 || d.Name() != name || !strings.Contains(path, "/upper/") {
			return nil
		}
		uid, _ := usernstest.Owner(t, path)
		owner = int(uid)
		return filepath.SkipAll
	})
	return owner
}

func execIn(t *testing.T, r *runtimetest.Runtime, id, script string) string {
	t.Helper()
	resp, err := r.Client.Runtime.ExecSync(t.Context(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", script}, Timeout: 30})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("exec in %s: %v (exit %d, stderr %s)", id, err, resp.GetExitCode(), resp.GetStderr())
	}
	return string(resp.Stdout)
}
