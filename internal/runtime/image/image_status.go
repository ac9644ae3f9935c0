package image

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageStatus implements the CRI: the image's status, or an empty response
// if it is not present (the CRI's way of saying so, not an error).
func (s *Service) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	rec, err := s.lookup(req.GetImage().GetImage())
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	cfg, err := s.configOf(rec)
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ImageStatusResponse{Image: toCRIImage(rec, cfg, s.isPinned(rec))}
	if req.GetVerbose() {
		if resp.Info, err = verboseInfo(rec, cfg); err != nil {
			return nil, status.Errorf(codes.Internal, "verbose info of %s: %v", rec.ID, err)
		}
	}
	return resp, nil
}
