package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStats reports one container's CPU and memory usage.
func (s *Server) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	c, err := s.containers.get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	st, err := s.containerStats(ctx, c)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "stats of %s: %v", c.ID, err)
	}
	return &runtimeapi.ContainerStatsResponse{Stats: st}, nil
}

// ListContainerStats reports usage of the running containers matching the filter.
func (s *Server) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	list, err := s.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		Id: f.GetId(), PodSandboxId: f.GetPodSandboxId(), LabelSelector: f.GetLabelSelector(),
	}})
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ListContainerStatsResponse{}
	for _, item := range list.GetContainers() {
		c, err := s.containers.get(item.GetId())
		if err != nil {
			continue // removed meanwhile
		}
		st, err := s.containerStats(ctx, c)
		if err != nil {
			// One unreadable cgroup must not hide the container from the
			// list: it is reported with its identity and no usage.
			s.log.Warn("container stats", "id", c.ID, "err", err)
			st = containerAttributesOnly(c)
		}
		resp.Stats = append(resp.Stats, st)
	}
	return resp, nil
}

// containerStats reads usage from the OCI runtime; a container that is not
// running reports its identity with no usage.
func (s *Server) containerStats(ctx context.Context, c container) (*runtimeapi.ContainerStats, error) {
	out := containerAttributesOnly(c)
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return out, nil
	}
	st, err := s.cfg.OCI.Stats(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	ts := st.Timestamp.UnixNano()
	out.Cpu = &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: st.CPUUsageNanos}}
	out.Memory = &runtimeapi.MemoryUsage{
		Timestamp:       ts,
		WorkingSetBytes: &runtimeapi.UInt64Value{Value: st.MemoryWorkingSet},
		UsageBytes:      &runtimeapi.UInt64Value{Value: st.MemoryUsage},
		RssBytes:        &runtimeapi.UInt64Value{Value: st.MemoryRSS},
		PageFaults:      &runtimeapi.UInt64Value{Value: st.PageFaults},
		MajorPageFaults: &runtimeapi.UInt64Value{Value: st.MajorPageFaults},
	}
	out.WritableLayer = &runtimeapi.FilesystemUsage{Timestamp: ts}
	return out, nil
}

func containerAttributesOnly(c container) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{
		Id: c.ID, Metadata: c.Config.GetMetadata(), Labels: c.Config.GetLabels(), Annotations: c.Config.GetAnnotations(),
	}}
}
