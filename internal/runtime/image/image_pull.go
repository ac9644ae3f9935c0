package image

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PullImage implements the CRI: pull the image and answer with its ID.
func (s *Service) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	id, err := s.Pull(ctx, req.GetImage().GetImage(), req.GetAuth())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PullImageResponse{ImageRef: id}, nil
}
