package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/image"
	"github.com/berth/berth/internal/runtime/network"
	"github.com/berth/berth/internal/runtime/oci"
	"github.com/berth/berth/internal/runtime/spec"
)

// RunPodSandbox creates the pod's namespaces, network and, if its
// containers share a PID namespace, pause process (see needsPause).
// Any failure undoes every step taken, so nothing is half-created.
func (s *Server) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (_ *runtimeapi.RunPodSandboxResponse, retErr error) {
	cfg := req.GetConfig()
	if err := validateSandboxConfig(cfg); err != nil {
		return nil, err
	}
	if err := s.checkRuntimeHandler(req.GetRuntimeHandler()); err != nil {
		return nil, err
	}
	// The pod's hostname and sysctls are checked before anything exists.
	if err := s.cfg.Specs.ValidateSandbox(cfg); err != nil {
		return nil, err
	}
	mode := pauseNone
	if needsPause(cfg) {
		mode = pauseProcess
	}
	id := newID()
	name := sandboxName(cfg.GetMetadata())
	if err := s.sandboxes.reserveName(name, id); err != nil {
		return nil, err
	}
	var undo undoStack
	defer func() {
		if retErr != nil {
			undo.run(ctx, s.log)
		}
	}()
	undo.add("release name", func(context.Context) error { s.sandboxes.releaseName(name); return nil })

	var pause Image
	if mode != pauseNone {
		var err error
		if pause, err = s.cfg.Images.Ensure(ctx, s.cfg.PauseImage); err != nil {
			return nil, fmt.Errorf("pause image %s: %w", s.cfg.PauseImage, err)
		}
	}
	sb := &sandbox{
		ID: id, Config: cfg, State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
		CreatedAt: time.Now().UnixNano(), RuntimeHandler: req.GetRuntimeHandler(),
		Dir: s.sandboxDir(id), ImageID: pause.ID, Pause: mode,
	}
	// Persisted before anything exists on the host, so that a crash part-way
	// leaves a NOTREADY record that recovery can clean up.
	if err := s.sandboxes.persist(id, sb); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	undo.add("forget sandbox", func(context.Context) error { return s.sandboxes.remove(id, name) })

	files, err := writeSandboxFiles(sb.Dir, cfg)
	undo.add("remove sandbox files", func(context.Context) error { return removeSandboxFiles(sb.Dir) })
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	pid, net, err := s.createNamespacesAndNetwork(ctx, sb, pause, &undo)
	if err != nil {
		return nil, err
	}
	pod := podNetwork(sb)
	if net.err == nil && sb.NetNS != "" {
		undo.add("tear down network", func(ctx context.Context) error { return s.cfg.Network.Teardown(ctx, pod) })
	}
	if net.err != nil {
		return nil, net.err
	}
	sb.IP, sb.AdditionalIPs = net.res.IP, net.res.AdditionalIPs
	if sb.IP != "" {
		if err := addHostsEntry(files.Hosts, sb.IP, hostnameOf(cfg)); err != nil {
			return nil, status.Errorf(codes.Internal, "%v", err)
		}
	}
	sb.Pid = pid
	sb.State = runtimeapi.PodSandboxState_SANDBOX_READY
	// Plugins see the pod before anyone else can: it is listed only once
	// they have all accepted it, and a veto undoes everything.
	unblock := s.cfg.NRI.BlockSync()
	defer unblock()
	if err := s.cfg.NRI.RunPodSandbox(ctx, nriPod(*sb)); err != nil {
		return nil, status.Errorf(codes.Unknown, "NRI RunPodSandbox: %v", err)
	}
	if err := s.sandboxes.put(id, sb); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if sb.hasPause() {
		s.watchSandboxExit(id)
	}
	s.log.Info("sandbox running", "id", id, "name", name, "ip", sb.IP, "pause", sb.hasPause())
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// createNamespacesAndNetwork makes the pod's namespaces, starts its pause
// process if it needs one (see needsPause) and attaches its network, and
// returns the pause process's pid and CNI's result. The pause start's
// error comes first; the network's is in the result, with what it did
// (to be undone) known from sb.NetNS either way.
func (s *Server) createNamespacesAndNetwork(ctx context.Context, sb *sandbox, pause Image, undo *undoStack) (int, attachResult, error) {
	if !sb.hasPause() {
		if err := s.pinNamespaces(sb, undo); err != nil {
			return 0, attachResult{}, err
		}
		return 0, <-s.attachNetwork(ctx, podNetwork(sb)), nil
	}
	if spec.UserNamespace(sb.Config) != nil {
		// The pause process creates the namespaces, which are pinned
		// from it before CNI can run in them.
		pid, err := s.startPause(ctx, sb, pause, undo)
		if err != nil {
			return 0, attachResult{}, err
		}
		if err := s.pinProcessNamespaces(sb, pid, undo); err != nil {
			return 0, attachResult{}, err
		}
		return pid, <-s.attachNetwork(ctx, podNetwork(sb)), nil
	}
	if err := s.pinNamespaces(sb, undo); err != nil {
		return 0, attachResult{}, err
	}
	// CNI runs while the pause process starts: it only needs the namespace
	// to exist, not to be configured yet.
	attached := s.attachNetwork(ctx, podNetwork(sb))
	pid, pauseErr := s.startPause(ctx, sb, pause, undo)
	net := <-attached
	if pauseErr != nil {
		if net.err == nil && sb.NetNS != "" {
			pod := podNetwork(sb)
			undo.add("tear down network", func(ctx context.Context) error { return s.cfg.Network.Teardown(ctx, pod) })
		}
		return 0, attachResult{}, pauseErr
	}
	return pid, net, nil
}

type attachResult struct {
	res network.Result
	err error
}

// attachNetwork wires the pod's namespace through CNI in the background; the
// caller always receives the result, so the goroutine never outlives the
// request. Host-network pods have nothing to attach.
func (s *Server) attachNetwork(ctx context.Context, pod network.Pod) <-chan attachResult {
	out := make(chan attachResult, 1)
	if pod.NetNS == "" {
		out <- attachResult{}
		return out
	}
	go func() {
		start := time.Now()
		res, err := s.cfg.Network.Setup(ctx, pod)
		s.cfg.Metrics.cniSetup.Observe(time.Since(start).Seconds())
		if err != nil {
			err = status.Errorf(codes.Internal, "set up pod network: %v", err)
		}
		out <- attachResult{res, err}
	}()
	return out
}

// startPause starts the sandbox's pause process, whose PID namespace the
// pod's containers join, under a monitor, and returns its pid.
func (s *Server) startPause(ctx context.Context, sb *sandbox, img Image, undo *undoStack) (int, error) {
	// Read-only: the pause process writes nothing, and runs no OCI runtime
	// that would create mount points in it.
	// Not idmapped (the pod's user namespace does not exist yet): the
	// pause process only executes its binary, which anyone may.
	rootfs, err := s.cfg.Images.PrepareRootfs(ctx, img.ID, sb.ID, image.RootfsOptions{ReadOnly: true, Owner: rootfsOwner(sb.Config)})
	if err != nil {
		return 0, fmt.Errorf("pause rootfs: %w", err)
	}
	undo.add("remove pause rootfs", func(ctx context.Context) error { return s.cfg.Images.RemoveRootfs(ctx, sb.ID) })
	proc, err := s.cfg.Specs.Pause(ctx, spec.PauseInput{
		ID: sb.ID, Config: sb.Config, Image: img.Config, RootfsPath: rootfs, Namespaces: sb.pinnedNamespaces(),
	})
	if err != nil {
		return 0, err
	}
	pid, err := s.cfg.OCI.RunDetached(ctx, oci.RunOptions{ID: sb.ID, SandboxID: sb.ID, Pause: proc})
	if err != nil {
		return 0, status.Errorf(codes.Internal, "start pause process: %v", err)
	}
	undo.add("end pause process", func(ctx context.Context) error { return s.deleteTask(ctx, sb.ID) })
	return pid, nil
}

func podNetwork(sb *sandbox) network.Pod {
	md := sb.Config.GetMetadata()
	pod := network.Pod{ID: sb.ID, Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid(), NetNS: sb.NetNS}
	for _, pm := range sb.Config.GetPortMappings() {
		if pm.GetHostPort() <= 0 {
			continue
		}
		pod.Ports = append(pod.Ports, network.PortMapping{
			HostPort: pm.GetHostPort(), ContainerPort: pm.GetContainerPort(),
			Protocol: strings.ToLower(pm.GetProtocol().String()), HostIP: pm.GetHostIp(),
		})
	}
	return pod
}

func hostnameOf(cfg *PodSandboxConfig) string {
	if h := cfg.GetHostname(); h != "" {
		return h
	}
	return cfg.GetMetadata().GetName()
}
