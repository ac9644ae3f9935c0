package spec

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/pause"
)

// UserNamespace returns a pod's user namespace options if the pod asks for
// one of its own (mode POD), nil if it runs in the host's. CRI's other
// modes are refused by ValidateSandbox.
func UserNamespace(cfg *runtimeapi.PodSandboxConfig) *runtimeapi.UserNamespace {
	u := podNamespaces(cfg).GetUsernsOptions()
	if u == nil || u.GetMode() != runtimeapi.NamespaceMode_POD {
		return nil
	}
	return u
}

// ValidateUserNamespace checks a pod's user namespace as the kubelet
// builds it: mode NODE (the host's) or POD with exactly one UID and one
// GID mapping, each mapping the pod's root (ID 0) onto host IDs other than
// the host's root. Such a pod has its own network, IPC and PID namespaces:
// a user namespace cannot own the host's.
func ValidateUserNamespace(cfg *runtimeapi.PodSandboxConfig) error {
	ns := podNamespaces(cfg)
	u := ns.GetUsernsOptions()
	if u == nil {
		return nil
	}
	switch u.GetMode() {
	case runtimeapi.NamespaceMode_NODE:
		if len(u.GetUids()) > 0 || len(u.GetGids()) > 0 {
			return invalid("user namespace mode NODE takes no ID mappings")
		}
		return nil
	case runtimeapi.NamespaceMode_POD:
	default:
		return invalid("user namespace mode %s is not supported: a pod runs in the host's user namespace (NODE) or its own (POD)", u.GetMode())
	}
	for _, m := range []struct {
		kind     string
		mappings []*runtimeapi.IDMapping
	}{{"UID", u.GetUids()}, {"GID", u.GetGids()}} {
		if len(m.mappings) != 1 {
			return invalid("a pod's user namespace needs exactly one %s mapping, got %d", m.kind, len(m.mappings))
		}
		e := m.mappings[0]
		switch {
		case e.GetContainerId() != 0:
			return invalid("the %s mapping of a pod's user namespace must map ID 0, not start at %d", m.kind, e.GetContainerId())
		case e.GetLength() == 0:
			return invalid("the %s mapping of a pod's user namespace is empty", m.kind)
		case e.GetHostId() == 0:
			return invalid("the %s mapping of a pod's user namespace maps onto the host's root", m.kind)
		case uint64(e.GetHostId())+uint64(e.GetLength()) > 1<<32-1:
			return invalid("the %s mapping %d+%d of a pod's user namespace overflows", m.kind, e.GetHostId(), e.GetLength())
		}
	}
	switch {
	case ns.GetNetwork() == runtimeapi.NamespaceMode_NODE:
		return invalid("a pod with its own user namespace cannot use the host's network")
	case ns.GetIpc() == runtimeapi.NamespaceMode_NODE:
		return invalid("a pod with its own user namespace cannot use the host's IPC namespace")
	case ns.GetPid() == runtimeapi.NamespaceMode_NODE:
		return invalid("a pod with its own user namespace cannot use the host's PID namespace")
	}
	return nil
}

// HostRoot is the host user and group of the root of a pod's user
// namespace: the owner the files its containers must reach are given.
func HostRoot(u *runtimeapi.UserNamespace) (uid, gid uint32) {
	return u.GetUids()[0].GetHostId(), u.GetGids()[0].GetHostId()
}

func pauseIDMaps(m []*runtimeapi.IDMapping) []pause.IDMap {
	out := make([]pause.IDMap, len(m))
	for i, e := range m {
		out[i] = pause.IDMap{ContainerID: e.GetContainerId(), HostID: e.GetHostId(), Size: e.GetLength()}
	}
	return out
}

func ociIDMaps(m []*runtimeapi.IDMapping) []specs.LinuxIDMapping {
	out := make([]specs.LinuxIDMapping, len(m))
	for i, e := range m {
		out[i] = specs.LinuxIDMapping{ContainerID: e.GetContainerId(), HostID: e.GetHostId(), Size: e.GetLength()}
	}
	return out
}

// setUserNamespace makes a container of a user-namespaced pod join the
// pod's pinned user namespace. The mappings go into the spec too: runc
// uses them to find the host IDs of the container's root (for the devices
// it creates), and they are the pinned namespace's own.
func setUserNamespace(s *specs.Spec, in Input) error {
	u := UserNamespace(in.Sandbox)
	if u == nil {
		return nil
	}
	if in.UserNSPath == "" {
		return invalid("the pod has no user namespace to join")
	}
	if c := in.Container.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); c != nil && c.GetMode() != runtimeapi.NamespaceMode_POD {
		return invalid("a container cannot leave its pod's user namespace (mode %s)", c.GetMode())
	}
	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace, Path: in.UserNSPath})
	s.Linux.UIDMappings = ociIDMaps(u.GetUids())
	s.Linux.GIDMappings = ociIDMaps(u.GetGids())
	return nil
}
