package server

import (
	"context"
	"net"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UpdateRuntimeConfig applies the node's pod CIDR to the default network.
func (s *Server) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	cidr := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
	if cidr == "" {
		return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
	}
	// The kubelet may send a comma-separated dual-stack list; the default
	// network has one range, so the first one is used.
	first, _, _ := strings.Cut(cidr, ",")
	if _, _, err := net.ParseCIDR(first); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "invalid pod CIDR %q: %v", cidr, err)
	}
	if err := s.cfg.Network.SetPodCIDR(first); err != nil {
		return nil, status.Errorf(codes.Internal, "apply pod CIDR: %v", err)
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
