package server

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodSandboxStats reports a sandbox's containers' usage.
func (s *Server) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	if err := requireID("sandbox", req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	sb, err := s.sandboxes.get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: s.sandboxStats(ctx, sb)}, nil
}

// ListPodSandboxStats reports usage of the sandboxes matching the filter.
func (s *Server) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	list, err := s.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		Id: f.GetId(), LabelSelector: f.GetLabelSelector(),
	}})
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ListPodSandboxStatsResponse{}
	for _, item := range list.GetItems() {
		if sb, err := s.sandboxes.get(item.GetId()); err == nil {
			resp.Stats = append(resp.Stats, s.sandboxStats(ctx, sb))
		}
	}
	return resp, nil
}

// sandboxStats sums the running containers' CPU and memory usage.
func (s *Server) sandboxStats(ctx context.Context, sb sandbox) *runtimeapi.PodSandboxStats {
	ts := time.Now().UnixNano()
	var cpu, mem uint64
	linux := &runtimeapi.LinuxPodSandboxStats{}
	for _, c := range s.containersOf(sb.ID) {
		st, err := s.containerStats(ctx, c)
		if err != nil {
			continue
		}
		linux.Containers = append(linux.Containers, st)
		cpu += st.GetCpu().GetUsageCoreNanoSeconds().GetValue()
		mem += st.GetMemory().GetWorkingSetBytes().GetValue()
	}
	linux.Cpu = &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu}}
	linux.Memory = &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{Value: mem}}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id: sb.ID, Metadata: sb.Config.GetMetadata(), Labels: sb.Config.GetLabels(), Annotations: sb.Config.GetAnnotations(),
		},
		Linux: linux,
	}
}
