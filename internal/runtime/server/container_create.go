package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/image"
	"github.com/berth/berth/internal/runtime/oci"
	"github.com/berth/berth/internal/runtime/spec"
)

// CreateContainer builds a container in a ready sandbox: image resolved,
// rootfs mounted, spec generated and written to its bundle. The OCI runtime
// and the monitor only come in at StartContainer (as in containerd, whose
// task is created there), so a created container has no process, monitor
// or OCI runtime state. On failure every step is undone.
func (s *Server) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (_ *runtimeapi.CreateContainerResponse, retErr error) {
	if err := requireID("sandbox", req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	cfg := req.GetConfig()
	if err := validateContainerConfig(cfg); err != nil {
		return nil, err
	}
	sb, err := s.sandboxes.get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	// Held for the whole create, so a concurrent Stop or RemovePodSandbox
	// cannot leave a container behind in a sandbox it has just cleared.
	unlock := s.locks.Lock(sb.ID)
	defer unlock()
	if sb, err = s.sandboxes.get(sb.ID); err != nil {
		return nil, err
	}
	if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %s is not ready", sb.ID)
	}
	targetPid, err := s.targetPid(ctx, sb.ID, cfg)
	if err != nil {
		return nil, err
	}
	img, err := s.cfg.Images.Resolve(ctx, cfg.GetImage().GetImage())
	if err != nil {
		return nil, err
	}
	c := &container{
		ID: newID(), SandboxID: sb.ID, Config: cfg, State: runtimeapi.ContainerState_CONTAINER_CREATED,
		ImageID: img.ID, ImageRef: imageRef(img), CreatedAt: time.Now().UnixNano(),
		Resources: initialResources(cfg), BundleDir: "",
	}
	c.BundleDir = s.bundleDir(c.ID)
	if cfg.GetLogPath() != "" && sb.Config.GetLogDirectory() != "" {
		if err := checkLogPath(cfg.GetLogPath()); err != nil {
			return nil, err
		}
		c.LogPath = filepath.Join(sb.Config.GetLogDirectory(), cfg.GetLogPath())
	}
	if err := s.containers.reserveName(c.nameKey(), c.ID); err != nil {
		return nil, err
	}
	var undo undoStack
	defer func() {
		if retErr != nil {
			undo.run(ctx, s.log)
		}
	}()
	undo.add("release name", func(context.Context) error { s.containers.releaseName(c.nameKey()); return nil })
	unblock := s.cfg.NRI.BlockSync()
	defer unblock()
	if err := s.prepareBundle(ctx, sb, c, img, targetPid, &undo); err != nil {
		return nil, err
	}
	if err := s.containers.put(c.ID, c); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := s.cfg.NRI.PostCreateContainer(ctx, nriPod(sb), nriContainer(*c, nil)); err != nil {
		s.log.Warn("NRI PostCreateContainer", "id", c.ID, "err", err)
	}
	s.publish(c.ID, sb.ID, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	return &runtimeapi.CreateContainerResponse{ContainerId: c.ID}, nil
}

// rootfsOptions are how a container's root filesystem (and its image
// volumes) are mounted: in a pod with a user namespace, owned by that
// namespace's root and with the image's files idmapped into it.
func rootfsOptions(sb sandbox) image.RootfsOptions {
	opts := image.RootfsOptions{Owner: rootfsOwner(sb.Config)}
	if opts.Owner != nil {
		opts.IDMapUserns = sb.UserNS
	}
	return opts
}

// prepareBundle mounts the rootfs, generates the spec and writes it into
// the container's bundle, for StartContainer to run. targetPid is the
// process whose PID namespace a container in TARGET mode joins.
func (s *Server) prepareBundle(ctx context.Context, sb sandbox, c *container, img Image, targetPid int, undo *undoStack) error {
	if c.LogPath != "" {
		if err := prepareLogFile(sb.Config.GetLogDirectory(), c.Config.GetLogPath()); err != nil {
			return err
		}
	}
	// Always writable: runc creates mount points in it before it remounts
	// the root read-only for readonly_rootfs (the spec's root.readonly).
	opts := rootfsOptions(sb)
	rootfs, err := s.cfg.Images.PrepareRootfs(ctx, img.ID, c.ID, opts)
	if err != nil {
		return fmt.Errorf("prepare rootfs: %w", err)
	}
	undo.add("remove rootfs", func(ctx context.Context) error { return s.cfg.Images.RemoveRootfs(ctx, c.ID) })
	opts.ReadOnly = true
	specConfig, err := s.prepareImageVolumes(ctx, c, opts, undo)
	if err != nil {
		return err
	}
	c.IDMapped = spec.IDMappedMounts(specConfig, s.idmapDir(c.ID))
	generated, err := s.cfg.Specs.Container(ctx, spec.Input{
		ID: c.ID, SandboxID: sb.ID, Sandbox: sb.Config, Container: specConfig, Image: img.Config,
		RootfsPath: rootfs, SandboxPid: sb.Pid, NetNSPath: sb.NetNS, UserNSPath: sb.UserNS, SandboxDir: sb.Dir, IDMapDir: s.idmapDir(c.ID),
		UTSNSPath: sb.UTSNS, IPCNSPath: sb.IPCNS, SysctlsSet: sb.Pause == pauseContainer, TargetPid: targetPid,
	})
	if err != nil {
		return err
	}
	if err := s.cfg.NRI.CreateContainer(ctx, nriPod(sb), nriContainer(*c, generated), generated); err != nil {
		return status.Errorf(codes.Unknown, "NRI CreateContainer: %v", err)
	}
	if generated.Process != nil {
		user := generated.Process.User
		c.User = &user
	}
	if err := os.MkdirAll(c.BundleDir, 0o700); err != nil {
		return status.Errorf(codes.Internal, "create bundle dir: %v", err)
	}
	undo.add("remove bundle", func(context.Context) error { return os.RemoveAll(c.BundleDir) })
	if err := oci.WriteSpec(c.BundleDir, generated); err != nil {
		return status.Errorf(codes.Internal, "%v", err)
	}
	return nil
}

// imageRef is what ContainerStatus reports as the image reference: a repo
// digest when the image has one (as containerd does), else its ID.
func imageRef(img Image) string {
	if len(img.RepoDigests) > 0 {
		return img.RepoDigests[0]
	}
	return img.ID
}

func initialResources(cfg *ContainerConfig) *runtimeapi.ContainerResources {
	if cfg.GetLinux().GetResources() == nil {
		return nil
	}
	return &runtimeapi.ContainerResources{Linux: cfg.GetLinux().GetResources()}
}
