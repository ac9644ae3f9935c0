package server

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/version"
)

// Status reports whether the runtime and the pod network are ready.
func (s *Server) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	runtimeReady := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true}
	networkReady := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if err := s.cfg.Network.Ready(ctx); err != nil {
		networkReady.Status = false
		networkReady.Reason = "NetworkPluginNotReady"
		networkReady.Message = err.Error()
	}
	resp := &runtimeapi.StatusResponse{
		Status:          &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{runtimeReady, networkReady}},
		RuntimeHandlers: s.runtimeHandlers(),
		Features:        &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: s.cfg.Features.SupplementalGroupsPolicy},
	}
	if req.GetVerbose() {
		info, err := json.Marshal(map[string]any{
			"version":    version.Get(),
			"stateDir":   s.cfg.StateDir,
			"pauseImage": s.cfg.PauseImage,
			"sandboxes":  len(s.sandboxes.list()),
			"containers": len(s.containers.list()),
		})
		if err == nil {
			resp.Info = map[string]string{"config": string(info)}
		}
	}
	return resp, nil
}
