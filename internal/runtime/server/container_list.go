package server

import (
	"context"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListContainers lists containers matching the filter's ID (or prefix),
// state, sandbox and labels.
func (s *Server) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range s.containers.list() {
		if f.GetId() != "" && !strings.HasPrefix(c.ID, f.GetId()) {
			continue
		}
		if f.GetPodSandboxId() != "" && !strings.HasPrefix(c.SandboxID, f.GetPodSandboxId()) {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != c.State {
			continue
		}
		if !matchLabels(f.GetLabelSelector(), c.Config.GetLabels()) {
			continue
		}
		resp.Containers = append(resp.Containers, &runtimeapi.Container{
			Id: c.ID, PodSandboxId: c.SandboxID, Metadata: c.Config.GetMetadata(),
			Image:       imageSpec(c),
			ImageRef:    c.ImageRef,
			ImageId:     c.ImageID,
			State:       c.State,
			CreatedAt:   c.CreatedAt,
			Labels:      c.Config.GetLabels(),
			Annotations: c.Config.GetAnnotations(),
		})
	}
	return resp, nil
}

func imageSpec(c container) *runtimeapi.ImageSpec {
	return &runtimeapi.ImageSpec{
		Image:              c.Config.GetImage().GetImage(),
		Annotations:        c.Config.GetImage().GetAnnotations(),
		UserSpecifiedImage: c.Config.GetImage().GetUserSpecifiedImage(),
	}
}
