package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListMetricDescriptors answers Unimplemented: berth does not yet export the
// cAdvisor-style container_* metrics over CRI (its own metrics are on the
// Prometheus endpoint). Unimplemented is what tells the kubelet and critest
// to use another stats source, where an empty list would claim support.
func (s *Server) ListMetricDescriptors(ctx context.Context, req *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "CRI metrics are not implemented by berth yet")
}

// ListPodSandboxMetrics: see ListMetricDescriptors.
func (s *Server) ListPodSandboxMetrics(ctx context.Context, req *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "CRI metrics are not implemented by berth yet")
}
