package server

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStatus reports a container's state, exit, image, log path and mounts.
func (s *Server) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	c, err := s.containers.get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: containerStatus(c)}
	if req.GetVerbose() {
		info := map[string]any{"sandboxID": c.SandboxID, "bundle": c.BundleDir}
		if st, err := s.cfg.OCI.State(ctx, c.ID); err == nil {
			info["pid"] = st.Pid
			info["ociStatus"] = st.Status
		}
		if data, err := json.Marshal(info); err == nil {
			resp.Info = map[string]string{"info": string(data)}
		}
	}
	return resp, nil
}

func containerStatus(c container) *runtimeapi.ContainerStatus {
	st := &runtimeapi.ContainerStatus{
		Id: c.ID, Metadata: c.Config.GetMetadata(), State: c.State,
		CreatedAt: c.CreatedAt, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt,
		ExitCode: c.ExitCode, Reason: c.Reason, Message: c.Message,
		Image: imageSpec(c), ImageRef: c.ImageRef, ImageId: c.ImageID,
		Labels: c.Config.GetLabels(), Annotations: c.Config.GetAnnotations(),
		Mounts: c.Config.GetMounts(), LogPath: c.LogPath, Resources: c.Resources,
	}
	if c.User != nil {
		groups := make([]int64, 0, len(c.User.AdditionalGids))
		for _, g := range c.User.AdditionalGids {
			groups = append(groups, int64(g))
		}
		st.User = &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{
			Uid: int64(c.User.UID), Gid: int64(c.User.GID), SupplementalGroups: groups,
		}}
	}
	return st
}
