package server

import (
	"context"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListPodSandbox lists sandboxes matching the filter's ID (or ID prefix),
// state and labels.
func (s *Server) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, sb := range s.sandboxes.list() {
		if f.GetId() != "" && !strings.HasPrefix(sb.ID, f.GetId()) {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != sb.State {
			continue
		}
		if !matchLabels(f.GetLabelSelector(), sb.Config.GetLabels()) {
			continue
		}
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{
			Id: sb.ID, Metadata: sb.Config.GetMetadata(), State: sb.State, CreatedAt: sb.CreatedAt,
			Labels: sb.Config.GetLabels(), Annotations: sb.Config.GetAnnotations(), RuntimeHandler: sb.RuntimeHandler,
		})
	}
	return resp, nil
}
