package spec

import (
	"context"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// infralessInput is a container of a pod without a pause container: no
// sandbox process, pinned namespaces, and pod sysctls.
func infralessInput(t *testing.T) Input {
	in := testInput(t)
	in.SandboxPid = 0
	in.NetNSPath, in.UTSNSPath, in.IPCNSPath = "/state/netns/s1", "/state/utsns/s1", "/state/ipcns/s1"
	in.Sandbox.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}}
	in.Sandbox.Linux.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_unprivileged_port_start": "0"}
	return in
}

// TestInfralessContainerJoinsPinnedNamespaces: with no sandbox process the
// container joins the pinned net, UTS and IPC files, gets a PID namespace
// of its own, and carries the pod's sysctls.
func TestInfralessContainerJoinsPinnedNamespaces(t *testing.T) {
	in := infralessInput(t)
	s := mustGenerate(t, in)
	got := map[specs.LinuxNamespaceType]string{}
	for _, n := range s.Linux.Namespaces {
		got[n.Type] = n.Path
	}
	want := map[specs.LinuxNamespaceType]string{
		specs.MountNamespace: "", specs.PIDNamespace: "",
		specs.NetworkNamespace: in.NetNSPath, specs.UTSNamespace: in.UTSNSPath, specs.IPCNamespace: in.IPCNSPath,
	}
	if len(got) != len(want) {
		t.Errorf("namespaces %v, want %v", got, want)
	}
	for k, v := range want {
		if p, ok := got[k]; !ok || p != v {
			t.Errorf("%s namespace %q (present %v), want %q", k, p, ok, v)
		}
	}
	if len(s.Linux.Sysctl) != 2 || s.Linux.Sysctl["kernel.shm_rmid_forced"] != "1" || s.Linux.Sysctl["net.ipv4.ip_unprivileged_port_start"] != "0" {
		t.Errorf("sysctls %v, want the pod's", s.Linux.Sysctl)
	}

	// A pause process sets none: the containers still carry them.
	in.SandboxPid = 42
	if s := mustGenerate(t, in); len(s.Linux.Sysctl) != 2 {
		t.Errorf("container of a pod with a pause process got sysctls %v, want the pod's", s.Linux.Sysctl)
	}
	// A pause container of an older berth set them in the shared namespaces.
	in.SysctlsSet = true
	if s := mustGenerate(t, in); len(s.Linux.Sysctl) != 0 {
		t.Errorf("container of a pod whose pause container set the sysctls got %v", s.Linux.Sysctl)
	}
}

// TestInfralessHostNamespacesJoinNothing: host network and IPC need no
// pinned namespace and no sandbox process.
func TestInfralessHostNamespacesJoinNothing(t *testing.T) {
	in := infralessInput(t)
	in.NetNSPath, in.UTSNSPath, in.IPCNSPath = "", "", ""
	in.Sandbox.Linux.Sysctls = nil
	in.Sandbox.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE,
	}
	s := mustGenerate(t, in)
	if len(s.Linux.Namespaces) != 1 || s.Linux.Namespaces[0].Type != specs.MountNamespace {
		t.Errorf("namespaces %v, want only a mount namespace", s.Linux.Namespaces)
	}
}

// TestInfralessMissingPinnedNamespaceFails: a pod without a pause container
// whose IPC namespace was not pinned cannot silently fall back to the host's.
func TestInfralessMissingPinnedNamespaceFails(t *testing.T) {
	in := infralessInput(t)
	in.IPCNSPath = ""
	if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("missing pinned IPC namespace: %v", err)
	}
}

func TestValidateSandbox(t *testing.T) {
	ok := &runtimeapi.PodSandboxConfig{Hostname: "pod1", Linux: &runtimeapi.LinuxPodSandboxConfig{
		Sysctls: map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_forward": "1"},
	}}
	if err := ValidateSandbox(ok); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	hostNet := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}
	hostIPC := &runtimeapi.NamespaceOption{Ipc: runtimeapi.NamespaceMode_NODE}
	bad := map[string]*runtimeapi.PodSandboxConfig{
		"nil":                 nil,
		"hostname with slash": {Hostname: "a/b"},
		"non-namespaced":      {Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"vm.swappiness": "1"}}},
		"kernel.hostname":     {Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"kernel.hostname": "x"}}},
		"net with host net":   {Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"net.ipv4.ip_forward": "1"}, SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: hostNet}}},
		"ipc with host ipc":   {Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"kernel.shmmax": "1"}, SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: hostIPC}}},
		"path in sysctl name": {Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"net.ipv4/../x": "1"}}},
	}
	for name, cfg := range bad {
		if err := ValidateSandbox(cfg); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}
