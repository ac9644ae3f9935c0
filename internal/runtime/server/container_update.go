package server

import (
	"context"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UpdateContainerResources changes a created or running container's CPU
// and memory limits in place.
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
	unlock := s.locks.lock(c.ID)
	defer unlock()
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
	if err := s.cfg.OCI.UpdateResources(ctx, c.ID, ociRes); err != nil {
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
