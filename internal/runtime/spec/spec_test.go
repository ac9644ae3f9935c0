package spec

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/nspin"
	"github.com/berth/berth/internal/runtime/pause"
)

const testPasswd = `root:x:0:0:root:/root:/bin/sh
www-data:x:33:33:www-data:/var/www:/bin/false
default-user:x:1000:1000::/home/default-user:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
`

const testGroup = `root:x:0:
www-data:x:33:
default-user:x:1000:
group-defined-in-image:x:50000:default-user
other:x:60000:www-data,default-user
`

// testRootfs makes a rootfs holding only the user databases.
func testRootfs(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"passwd": testPasswd, "group": testGroup} {
		if err := os.WriteFile(filepath.Join(dir, "etc", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testInput(t *testing.T) Input {
	return Input{
		ID:         "c1",
		SandboxID:  "s1",
		Sandbox:    &runtimeapi.PodSandboxConfig{Hostname: "pod1", Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/pod1"}},
		Container:  &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{}},
		Image:      &v1.ConfigFile{Config: v1.Config{Cmd: []string{"sh"}, Env: []string{"PATH=/bin", "FOO=image"}}},
		RootfsPath: testRootfs(t),
		SandboxPid: 42,
	}
}

func mustGenerate(t *testing.T, in Input) *specs.Spec {
	t.Helper()
	s, err := Generate(context.Background(), in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return s
}

func TestProcessArgs(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		entrypoint, cmd, command, args []string
		want                           []string
	}{
		{"image only", []string{"/ep"}, []string{"a"}, nil, nil, []string{"/ep", "a"}},
		{"cri args replace cmd", []string{"/ep"}, []string{"a"}, nil, []string{"b"}, []string{"/ep", "b"}},
		{"cri command drops entrypoint and cmd", []string{"/ep"}, []string{"a"}, []string{"/c"}, nil, []string{"/c"}},
		{"cri command and args", []string{"/ep"}, []string{"a"}, []string{"/c"}, []string{"x"}, []string{"/c", "x"}},
		{"empty entrypoint reset", []string{""}, []string{"sh"}, nil, nil, []string{"sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := processArgs(tc.entrypoint, tc.cmd, tc.command, tc.args)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGenerateEnvAndCwd(t *testing.T) {
	in := testInput(t)
	in.Image.Config.WorkingDir = "/srv"
	in.Container.Envs = []*runtimeapi.KeyValue{{Key: "FOO", Value: []byte("cri")}, {Key: "BAR", Value: []byte("x=y")}}
	s := mustGenerate(t, in)
	want := []string{"PATH=/bin", "HOSTNAME=pod1", "FOO=cri", "BAR=x=y"}
	if !slices.Equal(s.Process.Env, want) {
		t.Errorf("env %q, want %q", s.Process.Env, want)
	}
	if s.Process.Cwd != "/srv" {
		t.Errorf("cwd %q", s.Process.Cwd)
	}
	if !slices.Equal(s.Process.Args, []string{"sh"}) {
		t.Errorf("args %q", s.Process.Args)
	}
}

func TestGenerateUser(t *testing.T) {
	i64 := func(v int64) *runtimeapi.Int64Value { return &runtimeapi.Int64Value{Value: v} }
	for _, tc := range []struct {
		name      string
		imageUser string
		sc        *runtimeapi.LinuxContainerSecurityContext
		want      specs.User
	}{
		{"default root", "", nil, specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0}}},
		{"image uid", "1002", nil, specs.User{UID: 1002, GID: 0, AdditionalGids: []uint32{0}}},
		{"image name", "www-data", nil, specs.User{UID: 33, GID: 33, AdditionalGids: []uint32{33, 60000}}},
		{"image uid:gid", "1003:1004", nil, specs.User{UID: 1003, GID: 1004, AdditionalGids: []uint32{1004}}},
		{"image name:gid", "www-data:1004", nil, specs.User{UID: 33, GID: 1004, AdditionalGids: []uint32{1004, 60000}}},
		{"merge groups from image", "1000", nil, specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 50000, 60000}}},
		{"strict ignores image groups", "1000", &runtimeapi.LinuxContainerSecurityContext{
			SupplementalGroupsPolicy: runtimeapi.SupplementalGroupsPolicy_Strict, SupplementalGroups: []int64{7},
		}, specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 7}}},
		{"run_as_user overrides image", "www-data", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(65534)},
			specs.User{UID: 65534, GID: 65534, AdditionalGids: []uint32{65534}}},
		{"run_as_username and group", "", &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "www-data", RunAsGroup: i64(5)},
			specs.User{UID: 33, GID: 5, AdditionalGids: []uint32{5, 60000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			in.Image.Config.User = tc.imageUser
			in.Container.Linux.SecurityContext = tc.sc
			s := mustGenerate(t, in)
			got := s.Process.User
			if got.UID != tc.want.UID || got.GID != tc.want.GID || !slices.Equal(got.AdditionalGids, tc.want.AdditionalGids) {
				t.Errorf("user %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestUserLookupStaysInRootfs(t *testing.T) {
	in := testInput(t)
	// An image whose /etc/passwd points at the host's must not be followed.
	if err := os.Remove(filepath.Join(in.RootfsPath, "etc", "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../../../etc/passwd", filepath.Join(in.RootfsPath, "etc", "passwd")); err != nil {
		t.Fatal(err)
	}
	in.Image.Config.User = "root"
	_, err := Generate(context.Background(), in)
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("want InvalidArgument for a passwd escaping the rootfs, got %v", err)
	}
}

func TestGenerateCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name      string
		add, drop []string
		has, lack []string
	}{
		{"defaults", nil, nil, []string{"CAP_CHOWN", "CAP_KILL"}, []string{"CAP_SYS_ADMIN"}},
		{"add without prefix", []string{"sys_admin"}, nil, []string{"CAP_SYS_ADMIN", "CAP_CHOWN"}, nil},
		{"drop one", nil, []string{"CAP_CHOWN"}, []string{"CAP_KILL"}, []string{"CAP_CHOWN"}},
		{"drop all add one", []string{"NET_ADMIN"}, []string{"ALL"}, []string{"CAP_NET_ADMIN"}, []string{"CAP_CHOWN"}},
		{"add all", []string{"ALL"}, nil, []string{"CAP_SYS_ADMIN", "CAP_BPF"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
				Capabilities: &runtimeapi.Capability{AddCapabilities: tc.add, DropCapabilities: tc.drop},
			}
			caps := mustGenerate(t, in).Process.Capabilities
			for _, c := range tc.has {
				if !slices.Contains(caps.Bounding, c) || !slices.Contains(caps.Effective, c) {
					t.Errorf("missing %s in %v", c, caps.Bounding)
				}
			}
			for _, c := range tc.lack {
				if slices.Contains(caps.Bounding, c) {
					t.Errorf("unexpected %s", c)
				}
			}
		})
	}
}

func TestGeneratePrivileged(t *testing.T) {
	in := testInput(t)
	in.Sandbox.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}
	in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Privileged: true,
		Seccomp:    &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	s := mustGenerate(t, in)
	if len(s.Linux.MaskedPaths) != 0 || len(s.Linux.ReadonlyPaths) != 0 || s.Linux.Seccomp != nil {
		t.Errorf("privileged kept restrictions: masked %v ro %v seccomp %v", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths, s.Linux.Seccomp != nil)
	}
	if !slices.Contains(s.Process.Capabilities.Bounding, "CAP_SYS_ADMIN") {
		t.Error("privileged lacks CAP_SYS_ADMIN")
	}
	for _, m := range s.Mounts {
		if m.Destination == "/sys" && slices.Contains(m.Options, "ro") {
			t.Error("privileged /sys is read-only")
		}
	}
	if len(s.Linux.Resources.Devices) != 1 || !s.Linux.Resources.Devices[0].Allow {
		t.Errorf("privileged device rules %+v", s.Linux.Resources.Devices)
	}

	in.Sandbox.Linux.SecurityContext = nil
	if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("privileged container in unprivileged sandbox: %v", err)
	}
}

func TestGenerateSeccomp(t *testing.T) {
	in := testInput(t)
	in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	s := mustGenerate(t, in)
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActErrno || len(s.Linux.Seccomp.Syscalls) == 0 {
		t.Fatalf("RuntimeDefault gave %+v", s.Linux.Seccomp)
	}

	profile := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(profile, []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["chmod"],"action":"SCMP_ACT_ERRNO"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	in.Container.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: profile}
	s = mustGenerate(t, in)
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActAllow {
		t.Fatalf("Localhost gave %+v", s.Linux.Seccomp)
	}

	in.Container.Linux.SecurityContext.Seccomp.LocalhostRef = filepath.Join(t.TempDir(), "missing.json")
	if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("missing localhost profile: %v", err)
	}
}

func TestGenerateNamespaces(t *testing.T) {
	nsOf := func(s *specs.Spec) map[specs.LinuxNamespaceType]string {
		m := map[specs.LinuxNamespaceType]string{}
		for _, n := range s.Linux.Namespaces {
			m[n.Type] = n.Path
		}
		return m
	}
	in := testInput(t)
	in.NetNSPath = "/run/netns/pod1"
	ns := nsOf(mustGenerate(t, in))
	want := map[specs.LinuxNamespaceType]string{
		specs.MountNamespace: "", specs.NetworkNamespace: "/run/netns/pod1",
		specs.UTSNamespace: "/proc/42/ns/uts", specs.IPCNamespace: "/proc/42/ns/ipc", specs.PIDNamespace: "/proc/42/ns/pid",
	}
	if len(ns) != len(want) {
		t.Errorf("namespaces %v, want %v", ns, want)
	}
	for k, v := range want {
		if ns[k] != v {
			t.Errorf("%s namespace %q, want %q", k, ns[k], v)
		}
	}

	in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}}
	if p, ok := nsOf(mustGenerate(t, in))[specs.PIDNamespace]; !ok || p != "" {
		t.Errorf("container PID namespace: %q %v", p, ok)
	}
	// TARGET joins the target container's process; one without a process
	// to join is refused, not given a PID namespace of its own.
	in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: "app"}}
	in.TargetPid = 77
	if p := nsOf(mustGenerate(t, in))[specs.PIDNamespace]; p != "/proc/77/ns/pid" {
		t.Errorf("TARGET PID namespace %q, want the target's /proc/77/ns/pid", p)
	}
	in.TargetPid = 0
	if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("TARGET without a target process: %v, want InvalidArgument", err)
	}

	in.Sandbox.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE,
	}}
	ns = nsOf(mustGenerate(t, in))
	if len(ns) != 1 {
		t.Errorf("host namespaces: want only a mount namespace, got %v", ns)
	}

	in = testInput(t)
	in.SandboxPid = 0
	if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("no sandbox pid: %v", err)
	}
}

func TestGenerateMounts(t *testing.T) {
	in := testInput(t)
	in.SandboxDir = "/var/lib/berth/sandboxes/s1"
	in.Container.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: "/srv/data", Readonly: true},
		{ContainerPath: "/shared", HostPath: "/srv/shared", Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
		{ContainerPath: "/etc/hosts", HostPath: "/kubelet/hosts"},
	}
	s := mustGenerate(t, in)
	byDst := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		if _, dup := byDst[m.Destination]; dup {
			t.Errorf("duplicate mount at %s", m.Destination)
		}
		byDst[m.Destination] = m
	}
	if m := byDst["/data"]; !slices.Contains(m.Options, "ro") || !slices.Contains(m.Options, "rprivate") {
		t.Errorf("/data options %v", m.Options)
	}
	if m := byDst["/shared"]; !slices.Contains(m.Options, "rshared") || s.Linux.RootfsPropagation != "rshared" {
		t.Errorf("/shared options %v rootfs propagation %q", m.Options, s.Linux.RootfsPropagation)
	}
	if byDst["/etc/hosts"].Source != "/kubelet/hosts" {
		t.Errorf("container's own /etc/hosts replaced: %+v", byDst["/etc/hosts"])
	}
	if byDst["/etc/resolv.conf"].Source != "/var/lib/berth/sandboxes/s1/resolv.conf" || byDst["/dev/shm"].Source != "/var/lib/berth/sandboxes/s1/shm" {
		t.Errorf("sandbox files: %+v %+v", byDst["/etc/resolv.conf"], byDst["/dev/shm"])
	}

	in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/r", HostPath: "/srv", Readonly: true, RecursiveReadOnly: true}}
	if _, err := Generate(context.Background(), in); status.Code(err) != codes.InvalidArgument {
		t.Errorf("rro without runtime support: %v", err)
	}
	in.Host.RecursiveReadOnly = true
	s = mustGenerate(t, in)
	if m := s.Mounts[len(s.Mounts)-1]; m.Destination != "/r" || !slices.Contains(m.Options, "rro") {
		t.Errorf("rro mount %+v", m)
	}
}

func TestGenerateResources(t *testing.T) {
	in := testInput(t)
	in.Host.OOMScoreAdjMin = 0
	in.Container.Linux.Resources = &runtimeapi.LinuxContainerResources{
		CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 64 << 20,
		OomScoreAdj: -998, CpusetCpus: "0",
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}},
	}
	s := mustGenerate(t, in)
	r := s.Linux.Resources
	if *r.CPU.Shares != 512 || *r.CPU.Quota != 50000 || *r.CPU.Period != 100000 || r.CPU.Cpus != "0" {
		t.Errorf("cpu %+v", r.CPU)
	}
	if *r.Memory.Limit != 64<<20 {
		t.Errorf("memory %+v", r.Memory)
	}
	if len(r.HugepageLimits) != 0 {
		t.Errorf("hugepage limits kept without the hugetlb controller: %+v", r.HugepageLimits)
	}
	in.Host.Hugetlb = true
	if r := mustGenerate(t, in).Linux.Resources; len(r.HugepageLimits) != 1 || r.HugepageLimits[0].Pagesize != "2MB" {
		t.Errorf("hugepages %+v", r.HugepageLimits)
	}
	if *s.Process.OOMScoreAdj != 0 {
		t.Errorf("oom_score_adj lowered below the runtime's own: %d", *s.Process.OOMScoreAdj)
	}
	if s.Linux.CgroupsPath != "/kubepods/pod1/c1" {
		t.Errorf("cgroups path %q", s.Linux.CgroupsPath)
	}
	if len(r.Devices) != 1 || r.Devices[0].Allow {
		t.Errorf("default device rules lost: %+v", r.Devices)
	}
}

func TestGenerateRejectsBadInput(t *testing.T) {
	for name, mutate := range map[string]func(*Input){
		"no command":   func(in *Input) { in.Image.Config.Cmd = nil },
		"relative cwd": func(in *Input) { in.Container.WorkingDir = "srv" },
		"bad env":      func(in *Input) { in.Container.Envs = []*runtimeapi.KeyValue{{Key: "A=B"}} },
		"unknown cap": func(in *Input) {
			in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"FLY"}}}
		},
		"unknown user":   func(in *Input) { in.Image.Config.User = "ghost" },
		"relative mount": func(in *Input) { in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "data", HostPath: "/srv"}} },
		"bad device perms": func(in *Input) {
			in.Container.Devices = []*runtimeapi.Device{{ContainerPath: "/dev/x", HostPath: "/dev/null", Permissions: "rwx"}}
		},
		"missing device": func(in *Input) {
			in.Container.Devices = []*runtimeapi.Device{{ContainerPath: "/dev/x", HostPath: "/dev/nonexistent-berth"}}
		},
		"id with slash":    func(in *Input) { in.ID = "../evil" },
		"oom out of range": func(in *Input) { in.Container.Linux.Resources = &runtimeapi.LinuxContainerResources{OomScoreAdj: 5000} },
		"bad cpuset": func(in *Input) {
			in.Container.Linux.Resources = &runtimeapi.LinuxContainerResources{CpusetCpus: "0;rm"}
		},
		"relative masked": func(in *Input) {
			in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{MaskedPaths: []string{"proc/kcore"}}
		},
		"ambient not in set": func(in *Input) {
			in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Capabilities: &runtimeapi.Capability{AddAmbientCapabilities: []string{"CAP_SYS_ADMIN"}}}
		},
		"negative memory": func(in *Input) {
			in.Container.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: -1}
		},
		"no container config": func(in *Input) { in.Container = nil },
		"group without user": func(in *Input) {
			in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: &runtimeapi.Int64Value{Value: 5}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := testInput(t)
			mutate(&in)
			_, err := Generate(context.Background(), in)
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("want InvalidArgument, got %v", err)
			}
		})
	}
}

func TestGenerateDevice(t *testing.T) {
	in := testInput(t)
	in.Container.Devices = []*runtimeapi.Device{{ContainerPath: "/dev/mynull", HostPath: "/dev/null", Permissions: "rw"}}
	s := mustGenerate(t, in)
	if len(s.Linux.Devices) != 1 || s.Linux.Devices[0].Path != "/dev/mynull" || s.Linux.Devices[0].Major != 1 || s.Linux.Devices[0].Minor != 3 {
		t.Fatalf("devices %+v", s.Linux.Devices)
	}
	last := s.Linux.Resources.Devices[len(s.Linux.Resources.Devices)-1]
	if !last.Allow || last.Access != "rw" || *last.Major != 1 || *last.Minor != 3 {
		t.Errorf("device rule %+v", last)
	}
}

func TestGeneratePause(t *testing.T) {
	rootfs := testRootfs(t)
	if err := os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "pause"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	pins := map[nspin.Type]string{nspin.Net: "/run/netns/p", nspin.IPC: "/run/ipcns/p"}
	in := PauseInput{
		ID: "s1", Config: &runtimeapi.PodSandboxConfig{Hostname: "pod1", Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/podA"}},
		RootfsPath: rootfs, Namespaces: pins,
		Image: &v1.ConfigFile{Config: v1.Config{Entrypoint: []string{"pause"}, Cmd: []string{"-v"}, Env: []string{"PATH=/usr/bin:/bin"}, User: "65535:65535"}},
		Host:  Host{OOMScoreAdjMin: -999},
	}
	p, err := GeneratePause(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := &pause.Process{
		Args: []string{"/bin/pause", "-v"}, Env: []string{"PATH=/usr/bin:/bin", "HOSTNAME=pod1"}, Root: rootfs,
		UID: 65535, GID: 65535, Namespaces: pins, CgroupsPath: "/kubepods/podA/s1", OOMScoreAdj: -998,
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("pause process\n%+v\nwant\n%+v", p, want)
	}

	// The pod's user wins over the image's, but root never runs it; the
	// runtime's own OOM score is a floor.
	in.Config.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1000}}
	in.Host.OOMScoreAdjMin = 0
	if p, err := GeneratePause(context.Background(), in); err != nil || p.UID != 1000 || p.OOMScoreAdj != 0 {
		t.Errorf("pod user 1000, runtime OOM score 0: %+v, %v", p, err)
	}
	in.Config.Linux.SecurityContext.RunAsUser.Value = 0
	if p, err := GeneratePause(context.Background(), in); err != nil || p.UID != 65535 || p.GID != 65535 {
		t.Errorf("pod user root: %+v, %v", p, err)
	}

	for name, bad := range map[string]func(*PauseInput){
		"no command":           func(in *PauseInput) { in.Image = &v1.ConfigFile{} },
		"command not in image": func(in *PauseInput) { in.Image = &v1.ConfigFile{Config: v1.Config{Cmd: []string{"nothere"}}} },
		"relative rootfs":      func(in *PauseInput) { in.RootfsPath = "rootfs" },
		"bad ID":               func(in *PauseInput) { in.ID = "../x" },
		"no config":            func(in *PauseInput) { in.Config = nil },
	} {
		in := in
		in.Config = proto.Clone(in.Config).(*runtimeapi.PodSandboxConfig)
		bad(&in)
		if _, err := GeneratePause(context.Background(), in); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}

func TestPrivilegedAndAllGetOnlyTheRuntimesCapabilities(t *testing.T) {
	own := []string{"CAP_CHOWN", "CAP_KILL", "CAP_SYS_ADMIN"}
	in := testInput(t)
	in.Host.Capabilities = own
	in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"ALL"}},
	}
	if got := mustGenerate(t, in).Process.Capabilities.Bounding; !slices.Equal(got, own) {
		t.Errorf("add ALL gave %v, want the runtime's own %v", got, own)
	}
	in.Sandbox.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}
	in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Privileged: true}
	if got := mustGenerate(t, in).Process.Capabilities.Effective; !slices.Equal(got, own) {
		t.Errorf("privileged gave %v, want the runtime's own %v", got, own)
	}
}

func TestCapabilitiesInMask(t *testing.T) {
	// This host's bounding set: everything up to CAP_CHECKPOINT_RESTORE but CAP_SYS_RESOURCE.
	got := capabilitiesInMask(0x000001fffeffffff)
	if slices.Contains(got, "CAP_SYS_RESOURCE") || !slices.Contains(got, "CAP_CHECKPOINT_RESTORE") || len(got) != len(allCapabilities)-1 {
		t.Errorf("mask gave %v", got)
	}
	own, err := ownCapabilities()
	if err != nil || len(own) == 0 {
		t.Fatalf("own capabilities %v: %v", own, err)
	}
}
