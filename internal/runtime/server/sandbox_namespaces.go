package server

import (
	"context"
	"errors"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/image"
	"github.com/berth/berth/internal/runtime/nspin"
	"github.com/berth/berth/internal/runtime/spec"
)

// needsPause reports whether a pod needs a pause process: only when its
// containers share a PID namespace, whose init (PID 1, the reaper) the pause
// process is. Every other pod runs without one, as CRI-O's drop_infra_ctr
// does, which saves a monitor and a process per pod. Either way the pod's
// other namespaces are pinned files that the containers join.
//
// A pod with a user namespace of its own always has one: its pause process
// creates that namespace and the ones it owns (see package pause), since a
// multithreaded runtime can neither create nor join a user namespace.
func needsPause(cfg *PodSandboxConfig) bool {
	return cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetPid() == runtimeapi.NamespaceMode_POD ||
		spec.UserNamespace(cfg) != nil
}

// pinnedNamespaces are the sandbox's pinned namespaces by type, for its
// pause process to be born in; a type absent is the host's.
func (s *sandbox) pinnedNamespaces() map[nspin.Type]string {
	out := map[nspin.Type]string{}
	for t, p := range map[nspin.Type]string{nspin.Net: s.NetNS, nspin.UTS: s.UTSNS, nspin.IPC: s.IPCNS} {
		if p != "" {
			out[t] = p
		}
	}
	return out
}

// rootfsOwner is who a container's root filesystem belongs to: nil (the
// host's root) unless its pod has a user namespace, whose root's host IDs
// own it then.
func rootfsOwner(cfg *PodSandboxConfig) *image.Owner {
	u := spec.UserNamespace(cfg)
	if u == nil {
		return nil
	}
	uid, gid := spec.HostRoot(u)
	return &image.Owner{UID: uid, GID: gid}
}

// pinPath is where the pinned namespace of type t of sandbox id lives:
// StateDir/netns/ID, utsns/ID, ipcns/ID.
func (s *Server) pinPath(t nspin.Type, id string) string {
	return filepath.Join(s.cfg.StateDir, string(t)+"ns", id)
}

// namespacesToPin lists the namespaces the runtime itself creates for a
// sandbox: the network and UTS ones unless it uses the host's network (which
// means the host's UTS namespace too, as in Kubernetes), and the IPC one
// unless it is the host's.
func (s *Server) namespacesToPin(sb *sandbox) map[nspin.Type]string {
	ns := sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	hostNet := ns.GetNetwork() == runtimeapi.NamespaceMode_NODE
	paths := map[nspin.Type]string{}
	if !hostNet {
		paths[nspin.Net] = s.pinPath(nspin.Net, sb.ID)
	}
	if !hostNet {
		paths[nspin.UTS] = s.pinPath(nspin.UTS, sb.ID)
	}
	if ns.GetIpc() != runtimeapi.NamespaceMode_NODE {
		paths[nspin.IPC] = s.pinPath(nspin.IPC, sb.ID)
	}
	return paths
}

// pinProcessNamespaces pins the namespaces the pause process of a
// user-namespaced pod was born in (its user namespace and the network, UTS
// and IPC ones that namespace owns), sets the pod's hostname and brings up
// loopback, and records their paths.
func (s *Server) pinProcessNamespaces(sb *sandbox, pid int, undo *undoStack) error {
	paths := s.namespacesToPin(sb)
	paths[nspin.User] = s.pinPath(nspin.User, sb.ID)
	if err := nspin.PinProcess(pid, paths); err != nil {
		return status.Errorf(codes.Internal, "pin pod namespaces: %v", err)
	}
	sb.NetNS, sb.UTSNS, sb.IPCNS, sb.UserNS = paths[nspin.Net], paths[nspin.UTS], paths[nspin.IPC], paths[nspin.User]
	undo.add("unpin namespaces", func(context.Context) error { return unpinAll(sb.NetNS, sb.UTSNS, sb.IPCNS, sb.UserNS) })
	if err := nspin.Configure(sb.NetNS, sb.UTSNS, sb.Config.GetHostname()); err != nil {
		return status.Errorf(codes.Internal, "pod namespaces: %v", err)
	}
	return nil
}

// pinNamespaces creates the sandbox's own namespaces in one go, with the
// pod's hostname set in its UTS namespace, and records their paths.
func (s *Server) pinNamespaces(sb *sandbox, undo *undoStack) error {
	paths := s.namespacesToPin(sb)
	if len(paths) == 0 {
		return nil
	}
	hostname := ""
	if _, ok := paths[nspin.UTS]; ok {
		hostname = sb.Config.GetHostname()
	}
	if err := nspin.Pin(paths, hostname); err != nil {
		return status.Errorf(codes.Internal, "create pod namespaces: %v", err)
	}
	sb.NetNS, sb.UTSNS, sb.IPCNS = paths[nspin.Net], paths[nspin.UTS], paths[nspin.IPC]
	undo.add("unpin namespaces", func(context.Context) error { return unpinAll(sb.NetNS, sb.UTSNS, sb.IPCNS) })
	return nil
}

// unpinAll removes pinned namespaces, skipping "" (none of that type).
func unpinAll(paths ...string) error {
	var errs []error
	for _, p := range paths {
		if p != "" {
			errs = append(errs, nspin.Unpin(p))
		}
	}
	return errors.Join(errs...)
}

// pinnedNamespacesLost names a pinned namespace of the sandbox that is no
// longer mounted (after a reboot, or removed by hand); "" if none.
func pinnedNamespacesLost(sb *sandbox) string {
	for _, p := range []string{sb.NetNS, sb.UTSNS, sb.IPCNS, sb.UserNS} {
		if p != "" && !nspin.IsPinned(p) {
			return p
		}
	}
	return ""
}
