package server

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodSandboxStatus reports a sandbox's state, IPs and namespaces.
func (s *Server) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := requireID("sandbox", req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	sb, err := s.sandboxes.get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: sandboxStatus(sb)}
	if req.GetVerbose() {
		info, err := json.Marshal(map[string]any{
			"pid": sb.Pid, "netns": sb.NetNS, "dir": sb.Dir, "image": sb.ImageID,
			"pause": sb.hasPause(), "utsns": sb.UTSNS, "ipcns": sb.IPCNS,
			"runtimeHandler": sb.RuntimeHandler,
		})
		if err == nil {
			resp.Info = map[string]string{"info": string(info)}
		}
	}
	return resp, nil
}

func sandboxStatus(sb sandbox) *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:        sb.ID,
		Metadata:  sb.Config.GetMetadata(),
		State:     sb.State,
		CreatedAt: sb.CreatedAt,
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: sb.IP},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
		Labels:         sb.Config.GetLabels(),
		Annotations:    sb.Config.GetAnnotations(),
		RuntimeHandler: sb.RuntimeHandler,
	}
	for _, ip := range sb.AdditionalIPs {
		st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
	}
	return st
}
