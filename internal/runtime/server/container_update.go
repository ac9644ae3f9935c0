package server

import (
	"context"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/oci"
)

// UpdateContainerResources changes a running container's CPU and memory
// limits in place, and a created one's in the spec it will start with.
func (s *Server) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	res := req.GetLinux()
	if res == nil {
		return nil, invalid("linux resources are required")
	}
	c, err := s.containers.get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	unlock := s.locks.Lock(c.ID)
	defer unlock()
	if c, err = s.containers.get(c.ID); err != nil {
		return nil, err
	}
	if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %s has exited", c.ID)
	}
	sb, err := s.sandboxes.get(c.SandboxID)
	if err != nil {
		return nil, err
	}
	ociRes, err := s.cfg.NRI.UpdateContainer(ctx, nriPod(sb), nriContainer(c, nil), ociResources(res))
	if err != nil {
		return nil, status.Errorf(codes.Unknown, "NRI UpdateContainer: %v", err)
	}
	if err := s.applyResources(ctx, c, ociRes); err != nil {
		return nil, status.Errorf(codes.Internal, "update resources of %s: %v", c.ID, err)
	}
	if _, err := s.containers.update(c.ID, func(v *container) {
		v.Resources = &runtimeapi.ContainerResources{Linux: res}
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := s.cfg.NRI.PostUpdateContainer(ctx, nriPod(sb), nriContainer(c, nil)); err != nil {
		s.log.Warn("NRI PostUpdateContainer", "id", c.ID, "err", err)
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// applyResources sets a container's resources; the caller holds its lock.
func (s *Server) applyResources(ctx context.Context, c container, res *specs.LinuxResources) error {
	if c.State == runtimeapi.ContainerState_CONTAINER_CREATED {
		// No cgroup yet: the limits go into the spec it will start with.
		return updateSpecResources(c.BundleDir, res)
	}
	return s.cfg.OCI.UpdateResources(ctx, c.ID, res)
}

// updateSpecResources applies res to the resources in bundle's spec, as
// `runc update` applies it to a running container's cgroup: what res
// leaves unset is kept.
func updateSpecResources(bundle string, res *specs.LinuxResources) error {
	spec, err := oci.ReadSpec(bundle)
	if err != nil {
		return err
	}
	if spec.Linux == nil {
		spec.Linux = &specs.Linux{}
	}
	if spec.Linux.Resources == nil {
		spec.Linux.Resources = &specs.LinuxResources{}
	}
	mergeResources(spec.Linux.Resources, res)
	return oci.WriteSpec(bundle, spec)
}

// mergeResources sets in dst every limit res sets.
func mergeResources(dst, res *specs.LinuxResources) {
	if c := res.CPU; c != nil {
		if dst.CPU == nil {
			dst.CPU = &specs.LinuxCPU{}
		}
		setIf(&dst.CPU.Shares, c.Shares)
		setIf(&dst.CPU.Quota, c.Quota)
		setIf(&dst.CPU.Burst, c.Burst)
		setIf(&dst.CPU.Period, c.Period)
		setIf(&dst.CPU.RealtimeRuntime, c.RealtimeRuntime)
		setIf(&dst.CPU.RealtimePeriod, c.RealtimePeriod)
		setIf(&dst.CPU.Idle, c.Idle)
		if c.Cpus != "" {
			dst.CPU.Cpus = c.Cpus
		}
		if c.Mems != "" {
			dst.CPU.Mems = c.Mems
		}
	}
	if m := res.Memory; m != nil {
		if dst.Memory == nil {
			dst.Memory = &specs.LinuxMemory{}
		}
		setIf(&dst.Memory.Limit, m.Limit)
		setIf(&dst.Memory.Reservation, m.Reservation)
		setIf(&dst.Memory.Swap, m.Swap)
		setIf(&dst.Memory.Swappiness, m.Swappiness)
	}
	if p := res.Pids; p != nil {
		dst.Pids = p
	}
	if b := res.BlockIO; b != nil && b.Weight != nil {
		if dst.BlockIO == nil {
			dst.BlockIO = &specs.LinuxBlockIO{}
		}
		dst.BlockIO.Weight = b.Weight
	}
	if len(res.HugepageLimits) > 0 {
		dst.HugepageLimits = res.HugepageLimits
	}
	for k, v := range res.Unified {
		if dst.Unified == nil {
			dst.Unified = map[string]string{}
		}
		dst.Unified[k] = v
	}
}

func setIf[T any](dst **T, v *T) {
	if v != nil {
		*dst = v
	}
}

// ociResources maps CRI's Linux resources onto the OCI cgroup settings.
func ociResources(r *runtimeapi.LinuxContainerResources) *specs.LinuxResources {
	out := &specs.LinuxResources{CPU: &specs.LinuxCPU{}, Memory: &specs.LinuxMemory{}}
	if v := r.GetCpuShares(); v > 0 {
		shares := uint64(v)
		out.CPU.Shares = &shares
	}
	if v := r.GetCpuQuota(); v != 0 {
		out.CPU.Quota = &v
	}
	if v := r.GetCpuPeriod(); v > 0 {
		period := uint64(v)
		out.CPU.Period = &period
	}
	out.CPU.Cpus, out.CPU.Mems = r.GetCpusetCpus(), r.GetCpusetMems()
	if v := r.GetMemoryLimitInBytes(); v > 0 {
		out.Memory.Limit = &v
	}
	if v := r.GetMemorySwapLimitInBytes(); v > 0 {
		out.Memory.Swap = &v
	}
	if len(r.GetUnified()) > 0 {
		out.Unified = r.GetUnified()
	}
	return out
}
