package server

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/version"
)

// RuntimeName is what Version reports as the runtime's name.
const RuntimeName = "berth"

// Version reports berth and the CRI version it serves.
func (s *Server) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0", // the CRI version of this message's schema
		RuntimeName:       RuntimeName,
		RuntimeVersion:    version.Version,
		RuntimeApiVersion: version.CRIVersion,
	}, nil
}
