package spec

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/pause"
)

func usernsPod(u *runtimeapi.UserNamespace, mutate ...func(*runtimeapi.NamespaceOption)) *runtimeapi.PodSandboxConfig {
	ns := &runtimeapi.NamespaceOption{UsernsOptions: u}
	for _, m := range mutate {
		m(ns)
	}
	return &runtimeapi.PodSandboxConfig{Hostname: "pod1", Linux: &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: "/kubepods/pod1", SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns},
	}}
}

func idMappings(entries ...[3]uint32) []*runtimeapi.IDMapping {
	var out []*runtimeapi.IDMapping
	for _, e := range entries {
		out = append(out, &runtimeapi.IDMapping{ContainerId: e[0], HostId: e[1], Length: e[2]})
	}
	return out
}

// podUserns is the kubelet's kind of pod user namespace: IDs 0..65535 on
// host IDs 131072..196607.
func podUserns() *runtimeapi.UserNamespace {
	m := idMappings([3]uint32{0, 131072, 65536})
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}
}

func TestValidateUserNamespace(t *testing.T) {
	for name, cfg := range map[string]*runtimeapi.PodSandboxConfig{
		"no options":         usernsPod(nil),
		"host's":             usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}),
		"the pod's own":      usernsPod(podUserns()),
		"pod-wide PID space": usernsPod(podUserns(), func(ns *runtimeapi.NamespaceOption) { ns.Pid = runtimeapi.NamespaceMode_CONTAINER }),
	} {
		if err := ValidateSandbox(cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]*runtimeapi.PodSandboxConfig{
		"mode CONTAINER":          usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_CONTAINER}),
		"mode TARGET":             usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_TARGET}),
		"POD without mappings":    usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD}),
		"NODE with mappings":      usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE, Uids: podUserns().Uids}),
		"two UID mappings":        usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: idMappings([3]uint32{0, 131072, 1000}, [3]uint32{1000, 200000, 1000}), Gids: podUserns().Gids}),
		"ID 0 not mapped":         usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: idMappings([3]uint32{1, 131072, 65536}), Gids: podUserns().Gids}),
		"onto the host's root":    usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: podUserns().Uids, Gids: idMappings([3]uint32{0, 0, 65536})}),
		"empty mapping":           usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: idMappings([3]uint32{0, 131072, 0}), Gids: podUserns().Gids}),
		"overflowing mapping":     usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: idMappings([3]uint32{0, 1<<32 - 100, 1000}), Gids: podUserns().Gids}),
		"with the host's network": usernsPod(podUserns(), func(ns *runtimeapi.NamespaceOption) { ns.Network = runtimeapi.NamespaceMode_NODE }),
		"with the host's IPC":     usernsPod(podUserns(), func(ns *runtimeapi.NamespaceOption) { ns.Ipc = runtimeapi.NamespaceMode_NODE }),
		"with the host's PIDs":    usernsPod(podUserns(), func(ns *runtimeapi.NamespaceOption) { ns.Pid = runtimeapi.NamespaceMode_NODE }),
	}
	for name, cfg := range bad {
		if err := ValidateSandbox(cfg); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}

func TestContainerJoinsThePodsUserNamespace(t *testing.T) {
	in := testInput(t)
	in.Sandbox = usernsPod(podUserns())
	in.UserNSPath, in.NetNSPath, in.UTSNSPath, in.IPCNSPath = "/run/userns/s1", "/run/netns/s1", "/run/utsns/s1", "/run/ipcns/s1"
	s := mustGenerate(t, in)
	if !hasNamespace(s, specs.UserNamespace, "/run/userns/s1") {
		t.Errorf("namespaces %v: no user namespace /run/userns/s1", s.Linux.Namespaces)
	}
	want := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 131072, Size: 65536}}
	if !reflect.DeepEqual(s.Linux.UIDMappings, want) || !reflect.DeepEqual(s.Linux.GIDMappings, want) {
		t.Errorf("ID mappings %v / %v, want %v", s.Linux.UIDMappings, s.Linux.GIDMappings, want)
	}

	// A pod in the host's user namespace gives its containers none.
	in = testInput(t)
	if s := mustGenerate(t, in); hasNamespace(s, specs.UserNamespace, "") || s.Linux.UIDMappings != nil {
		t.Errorf("host user namespace pod: %v, %v", s.Linux.Namespaces, s.Linux.UIDMappings)
	}

	for name, mutate := range map[string]func(*Input){
		"no pinned user namespace": func(in *Input) { in.UserNSPath = "" },
		"container leaves it": func(in *Input) {
			in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
				UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE},
			}}
		},
	} {
		in := testInput(t)
		in.Sandbox = usernsPod(podUserns())
		in.UserNSPath, in.NetNSPath, in.UTSNSPath, in.IPCNSPath = "/run/userns/s1", "/run/netns/s1", "/run/utsns/s1", "/run/ipcns/s1"
		mutate(&in)
		if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}

func hasNamespace(s *specs.Spec, typ specs.LinuxNamespaceType, path string) bool {
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == typ && (path == "" || ns.Path == path) {
			return true
		}
	}
	return false
}

// TestPauseCreatesAUserNamespacedPodsNamespaces: the pause process of a pod
// with its own user namespace creates the pod's namespaces with the pod's
// mappings instead of joining pinned ones, and runs as a user mapped in it.
func TestPauseCreatesAUserNamespacedPodsNamespaces(t *testing.T) {
	rootfs := testRootfs(t)
	if err := os.WriteFile(filepath.Join(rootfs, "pause"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	in := PauseInput{
		ID: "s1", Config: usernsPod(podUserns()), RootfsPath: rootfs,
		Image: &v1.ConfigFile{Config: v1.Config{Entrypoint: []string{"/pause"}}},
	}
	p, err := GeneratePause(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []pause.IDMap{{ContainerID: 0, HostID: 131072, Size: 65536}}
	if p.Namespaces != nil || !reflect.DeepEqual(p.UIDMappings, want) || !reflect.DeepEqual(p.GIDMappings, want) || p.UID != 65535 {
		t.Errorf("pause process %+v: want no pinned namespaces, mappings %v, user 65535", p, want)
	}
	// 65535, the pause user, is outside a mapping of 1000 IDs.
	small := idMappings([3]uint32{0, 131072, 1000})
	in.Config = usernsPod(&runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: small, Gids: small})
	if _, err := GeneratePause(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("pause user outside the mapping: %v, want InvalidArgument", err)
	}
}

// TestVolumeWithThePodsMappingsComesFromItsIDMappedClone: a mount with its
// pod's ID mappings (what the kubelet sends) is bind-mounted from where the
// runtime attaches its idmapped clone; other mappings are refused.
func TestVolumeWithThePodsMappingsComesFromItsIDMappedClone(t *testing.T) {
	in := testInput(t)
	in.Sandbox = usernsPod(podUserns())
	in.UserNSPath, in.NetNSPath, in.UTSNSPath, in.IPCNSPath = "/run/userns/s1", "/run/netns/s1", "/run/utsns/s1", "/run/ipcns/s1"
	in.IDMapDir = "/run/idmapped/c1"
	u := podUserns()
	in.Container.Mounts = []*runtimeapi.Mount{
		{HostPath: "/data/plain", ContainerPath: "/plain"},
		{HostPath: "/data/mapped", ContainerPath: "/mapped", UidMappings: u.Uids, GidMappings: u.Gids},
	}
	s := mustGenerate(t, in)
	sources := map[string]string{}
	for _, m := range s.Mounts {
		sources[m.Destination] = m.Source
	}
	if sources["/plain"] != "/data/plain" || sources["/mapped"] != "/run/idmapped/c1/1" {
		t.Errorf("mount sources %v: want /plain from /data/plain, /mapped from /run/idmapped/c1/1", sources)
	}
	if got := IDMappedMounts(in.Container, in.IDMapDir); !reflect.DeepEqual(got, map[string]string{"/run/idmapped/c1/1": "/data/mapped"}) {
		t.Errorf("IDMappedMounts: %v", got)
	}

	other := idMappings([3]uint32{0, 262144, 65536})
	in.Container.Mounts[1].UidMappings = other
	if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("volume with other mappings: %v, want InvalidArgument", err)
	}
	in = testInput(t)
	in.Container.Mounts = []*runtimeapi.Mount{{HostPath: "/data", ContainerPath: "/d", UidMappings: u.Uids, GidMappings: u.Gids}}
	if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("mapped volume in a pod without a user namespace: %v, want InvalidArgument", err)
	}
}
