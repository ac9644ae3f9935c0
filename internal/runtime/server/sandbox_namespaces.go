package server

import (
	"context"
	"errors"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/nspin"
)

// needsPause reports whether a pod needs a pause process: only when its
// containers share a PID namespace, whose init (PID 1, the reaper) the pause
// process is. Every other pod runs without one, as CRI-O's drop_infra_ctr
// does, which saves a monitor and a process per pod. Either way the pod's
// other namespaces are pinned files that the containers join.
func needsPause(cfg *PodSandboxConfig) bool {
	return cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetPid() == runtimeapi.NamespaceMode_POD
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
	for _, p := range []string{sb.NetNS, sb.UTSNS, sb.IPCNS} {
		if p != "" && !nspin.IsPinned(p) {
			return p
		}
	}
	return ""
}
