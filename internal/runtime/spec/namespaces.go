package spec

import (
	"fmt"
	"path"
	"strings"
	"unicode"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func podNamespaces(sb *runtimeapi.PodSandboxConfig) *runtimeapi.NamespaceOption {
	return sb.GetLinux().GetSecurityContext().GetNamespaceOptions()
}

func ipcMode(sb *runtimeapi.PodSandboxConfig) runtimeapi.NamespaceMode {
	return podNamespaces(sb).GetIpc()
}

func nsPath(pid int, ns string) string { return fmt.Sprintf("/proc/%d/ns/%s", pid, ns) }

func checkHostname(h string) error {
	if len(h) > 64 || strings.ContainsAny(h, "\x00/ ") {
		return invalid("invalid hostname %q", h)
	}
	return nil
}

// setContainerNamespaces makes the container join its pod's namespaces,
// per the pod's and container's namespace modes: the pinned ones when the
// pod has them, else the pause process's.
func setContainerNamespaces(s *specs.Spec, in Input) error {
	pod := podNamespaces(in.Sandbox)
	ctr := in.Container.GetLinux().GetSecurityContext().GetNamespaceOptions()
	join := func(t specs.LinuxNamespaceType, name, pinned string) error {
		if pinned != "" {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: t, Path: pinned})
			return nil
		}
		if in.SandboxPid <= 0 {
			return invalid("the sandbox has no process whose %s namespace could be joined", name)
		}
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: t, Path: nsPath(in.SandboxPid, name)})
		return nil
	}
	if pod.GetNetwork() != runtimeapi.NamespaceMode_NODE {
		if err := join(specs.NetworkNamespace, "net", in.NetNSPath); err != nil {
			return err
		}
		if err := join(specs.UTSNamespace, "uts", in.UTSNSPath); err != nil {
			return err
		}
	}
	if pod.GetIpc() != runtimeapi.NamespaceMode_NODE {
		if err := join(specs.IPCNamespace, "ipc", in.IPCNSPath); err != nil {
			return err
		}
	}
	mode := ctr.GetPid()
	switch {
	case pod.GetPid() == runtimeapi.NamespaceMode_NODE:
		mode = runtimeapi.NamespaceMode_NODE
	case pod.GetPid() == runtimeapi.NamespaceMode_CONTAINER && mode == runtimeapi.NamespaceMode_POD:
		// POD is the enum's zero value, so a container that says nothing
		// asks for it; a pod whose containers share no PID namespace has
		// none to offer (and no pause process holding one).
		mode = runtimeapi.NamespaceMode_CONTAINER
	}
	switch mode {
	case runtimeapi.NamespaceMode_NODE:
	case runtimeapi.NamespaceMode_CONTAINER:
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.PIDNamespace})
	case runtimeapi.NamespaceMode_TARGET:
		if in.TargetPid <= 0 {
			return invalid("PID namespace target %q has no running process", ctr.GetTargetId())
		}
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: nsPath(in.TargetPid, "pid")})
	case runtimeapi.NamespaceMode_POD:
		if err := join(specs.PIDNamespace, "pid", ""); err != nil {
			return err
		}
	default:
		return invalid("unknown PID namespace mode %v", mode)
	}
	return nil
}

// setSysctls puts the pod's sysctls into a container's spec: runc writes them
// inside the pod's namespaces the container joins. Only namespaced sysctls
// are accepted, and net.* ones need the pod's own network namespace.
func setSysctls(s *specs.Spec, sysctls map[string]string, sb *runtimeapi.PodSandboxConfig) error {
	if len(sysctls) == 0 {
		return nil
	}
	ns := podNamespaces(sb)
	s.Linux.Sysctl = map[string]string{}
	for k, v := range sysctls {
		switch {
		case strings.HasPrefix(k, "net."):
			if ns.GetNetwork() == runtimeapi.NamespaceMode_NODE {
				return invalid("sysctl %q is not allowed with host networking", k)
			}
		case strings.HasPrefix(k, "kernel.shm"), strings.HasPrefix(k, "kernel.msg"), k == "kernel.sem", strings.HasPrefix(k, "fs.mqueue."):
			if ns.GetIpc() == runtimeapi.NamespaceMode_NODE {
				return invalid("sysctl %q is not allowed with host IPC", k)
			}
		case k == "kernel.hostname", k == "kernel.domainname":
			return invalid("sysctl %q is set through the pod's hostname", k)
		default:
			return invalid("sysctl %q is not namespaced", k)
		}
		if strings.ContainsAny(k, "\x00/") || strings.Contains(k, "..") || strings.ContainsRune(v, 0) {
			return invalid("invalid sysctl %q", k)
		}
		s.Linux.Sysctl[k] = v
	}
	return nil
}

// cgroupsPath is the cgroupfs-driver path: the pod's parent plus the ID.
// A parent with a NUL or another control character is refused: the kernel
// would cut the path there, or runc would write a name nobody asked for.
func cgroupsPath(sb *runtimeapi.PodSandboxConfig, id string) (string, error) {
	parent := sb.GetLinux().GetCgroupParent()
	if parent == "" {
		parent = DefaultCgroupParent
	}
	if strings.ContainsFunc(parent, unicode.IsControl) {
		return "", invalid("invalid cgroup parent %q", parent)
	}
	return path.Join("/", parent, id), nil
}
