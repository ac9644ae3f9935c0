package spec

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/pause"
)

// FuzzGenerate feeds arbitrary CRI sandbox and container configs (protobuf)
// and image configs (JSON) to Generate. Seeds are in testdata/fuzz. Run:
//
//	go test -run '^$' -fuzz FuzzGenerate -fuzztime 60s ./internal/runtime/spec
func FuzzGenerate(f *testing.F) {
	rootfs := testRootfs(f)
	f.Fuzz(func(t *testing.T, sandbox, container, image []byte) {
		var sb runtimeapi.PodSandboxConfig
		var cc runtimeapi.ContainerConfig
		var img v1.ConfigFile
		if proto.Unmarshal(sandbox, &sb) != nil || proto.Unmarshal(container, &cc) != nil || json.Unmarshal(image, &img) != nil {
			return
		}
		// Seccomp Localhost would read arbitrary host files; devices would
		// stat them. Both are exercised by the table tests instead.
		if cc.GetLinux().GetSecurityContext().GetSeccomp().GetProfileType() == runtimeapi.SecurityProfile_Localhost {
			return
		}
		if sb.GetLinux().GetSecurityContext().GetPrivileged() || len(cc.GetDevices()) > 0 {
			return
		}
		in := Input{
			ID: "fuzz", SandboxID: "sb", Sandbox: &sb, Container: &cc, Image: &img,
			RootfsPath: rootfs, SandboxPid: 7, SandboxDir: "/var/lib/berth/sb", TargetPid: 9,
			UserNSPath: "/run/berth/userns/sb", IDMapDir: "/run/berth/idmapped/fuzz",
			Host: Host{OOMScoreAdjMin: -500},
		}
		s, err := Generate(context.Background(), in)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("error is not InvalidArgument: %v", err)
			}
			return
		}
		checkSpec(t, s, in)
	})
}

// FuzzGeneratePause feeds arbitrary CRI sandbox configs (protobuf) and
// pause image configs (JSON) to what RunPodSandbox does with them:
// ValidateSandbox, then GeneratePause. Whatever they say, an error is
// InvalidArgument, and the pause process never runs as root, stays in the
// sandbox's own cgroup and keeps the OOM score berth gives it.
func FuzzGeneratePause(f *testing.F) {
	rootfs := testRootfs(f)
	pauseImage := []byte(`{"config":{"Entrypoint":["/pause"],"User":"65535:65535","Env":["PATH=/bin"]}}`)
	for _, sb := range []*runtimeapi.PodSandboxConfig{
		{Hostname: "pod1", Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/besteffort/pod1"}},
		{Hostname: "pod1", Linux: &runtimeapi.LinuxPodSandboxConfig{
			Sysctls: map[string]string{"net.ipv4.ip_forward": "1", "kernel.shm_rmid_forced": "1"},
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				RunAsUser: &runtimeapi.Int64Value{Value: 0}, RunAsGroup: &runtimeapi.Int64Value{Value: 0},
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_POD},
			},
		}},
		{Hostname: "pod1", Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "../../escape", SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{
				Mode: runtimeapi.NamespaceMode_POD,
				Uids: []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}},
				Gids: []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}},
			}},
		}}},
	} {
		data, err := proto.Marshal(sb)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, pauseImage)
		f.Add(data, []byte(`{"config":{"Cmd":["pause"],"User":"0"}}`))
	}
	f.Fuzz(func(t *testing.T, sandbox, image []byte) {
		var sb runtimeapi.PodSandboxConfig
		var img v1.ConfigFile
		if proto.Unmarshal(sandbox, &sb) != nil || json.Unmarshal(image, &img) != nil {
			return
		}
		in := PauseInput{ID: "sb", Config: &sb, Image: &img, RootfsPath: rootfs, Host: Host{OOMScoreAdjMin: -500}}
		err := ValidateSandbox(&sb)
		if err == nil {
			var p *pause.Process
			p, err = GeneratePause(context.Background(), in)
			if err == nil {
				checkPause(t, p, in)
			}
		}
		if err != nil && status.Code(err) != codes.InvalidArgument {
			t.Fatalf("error is not InvalidArgument: %v", err)
		}
	})
}

// checkPause asserts what every pause process must hold.
func checkPause(t *testing.T, p *pause.Process, in PauseInput) {
	t.Helper()
	if p.UID == 0 {
		t.Fatalf("pause process runs as root: %+v", p)
	}
	if p.Root != in.RootfsPath || len(p.Args) == 0 {
		t.Fatalf("pause process %+v", p)
	}
	if !cleanAbs(p.CgroupsPath) || filepath.Base(p.CgroupsPath) != in.ID {
		t.Fatalf("cgroups path %q escapes or does not end in the ID", p.CgroupsPath)
	}
	if p.OOMScoreAdj < in.Host.OOMScoreAdjMin || p.OOMScoreAdj > 1000 {
		t.Fatalf("oom_score_adj %d", p.OOMScoreAdj)
	}
	if (UserNamespace(in.Config) != nil) != (len(p.UIDMappings) > 0) {
		t.Fatalf("user namespace %v, mappings %v", UserNamespace(in.Config), p.UIDMappings)
	}
}

// checkSpec asserts the invariants every generated spec must hold: what
// runc needs syntactically, and the safety properties berth promises.
func checkSpec(t *testing.T, s *specs.Spec, in Input) {
	t.Helper()
	if s.Root == nil || s.Root.Path != in.RootfsPath {
		t.Fatalf("root %+v is not the given rootfs", s.Root)
	}
	p := s.Process
	if p == nil || len(p.Args) == 0 {
		t.Fatal("no process args")
	}
	if !cleanAbs(p.Cwd) {
		t.Fatalf("cwd %q not a clean absolute path", p.Cwd)
	}
	for _, a := range p.Args {
		if strings.ContainsRune(a, 0) {
			t.Fatalf("NUL in arg %q", a)
		}
	}
	for _, e := range p.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" || strings.ContainsRune(e, 0) {
			t.Fatalf("bad env entry %q", e)
		}
	}
	if p.OOMScoreAdj == nil || *p.OOMScoreAdj < in.Host.OOMScoreAdjMin || *p.OOMScoreAdj > 1000 {
		t.Fatalf("oom_score_adj %v below the runtime's %d or above 1000", p.OOMScoreAdj, in.Host.OOMScoreAdjMin)
	}
	if p.Capabilities != nil {
		for _, set := range [][]string{p.Capabilities.Bounding, p.Capabilities.Effective, p.Capabilities.Permitted, p.Capabilities.Ambient} {
			for _, c := range set {
				if !slices.Contains(allCapabilities, c) {
					t.Fatalf("unknown capability %q", c)
				}
			}
		}
	}
	for _, m := range s.Mounts {
		if !cleanAbs(m.Destination) || m.Destination == "/" || m.Source == "" || m.Type == "" {
			t.Fatalf("bad mount %+v", m)
		}
	}
	seen := map[specs.LinuxNamespaceType]bool{}
	for _, n := range s.Linux.Namespaces {
		if seen[n.Type] {
			t.Fatalf("namespace %s twice", n.Type)
		}
		seen[n.Type] = true
	}
	cg := s.Linux.CgroupsPath
	if !cleanAbs(cg) || filepath.Base(cg) != in.ID {
		t.Fatalf("cgroups path %q escapes or does not end in the ID", cg)
	}
	for _, path := range append(slices.Clone(s.Linux.MaskedPaths), s.Linux.ReadonlyPaths...) {
		if !filepath.IsAbs(path) {
			t.Fatalf("masked/read-only path %q not absolute", path)
		}
	}
	for k := range s.Linux.Sysctl {
		if strings.ContainsAny(k, "/\x00") || strings.Contains(k, "..") {
			t.Fatalf("sysctl %q", k)
		}
	}
	if strings.ContainsRune(s.Hostname, 0) {
		t.Fatalf("hostname %q", s.Hostname)
	}
	checkUserNamespace(t, s, in)
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("spec does not encode: %v", err)
	}
}

// checkUserNamespace: a container joins its pod's user namespace exactly
// when the pod has one, with the pod's mappings, and bind-mounts from the
// runtime's idmapped clones only volumes that ask for mappings.
func checkUserNamespace(t *testing.T, s *specs.Spec, in Input) {
	t.Helper()
	u := UserNamespace(in.Sandbox)
	joined := slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool {
		return n.Type == specs.UserNamespace && n.Path == in.UserNSPath
	})
	if (u != nil) != joined || (u != nil) != (len(s.Linux.UIDMappings) == 1) {
		t.Fatalf("pod user namespace %v, spec namespaces %v, mappings %v", u, s.Linux.Namespaces, s.Linux.UIDMappings)
	}
	if u != nil && (s.Linux.UIDMappings[0].HostID != u.GetUids()[0].GetHostId() || s.Linux.GIDMappings[0].HostID != u.GetGids()[0].GetHostId() || u.GetUids()[0].GetHostId() == 0) {
		t.Fatalf("spec mappings %v / %v, pod's %v", s.Linux.UIDMappings, s.Linux.GIDMappings, u)
	}
	clones := IDMappedMounts(in.Container, in.IDMapDir)
	for _, m := range s.Mounts {
		if _, ok := clones[m.Source]; strings.HasPrefix(m.Source, in.IDMapDir+"/") && !ok {
			t.Fatalf("mount %+v from an idmapped clone no volume asked for", m)
		}
	}
}

func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}
