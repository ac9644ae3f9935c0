package server

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/cgroupstats"
	"github.com/berth/berth/internal/runtime/network"
)

// ListPodSandboxMetrics reports the cAdvisor-style series of every ready
// sandbox: the pod network's at pod level, each running container's from
// its cgroups, processes and writable layer. A container whose figures
// cannot be read is logged and reported with what could be read, so one
// vanishing process never fails the whole listing.
func (s *Server) ListPodSandboxMetrics(ctx context.Context, req *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	defs := metricDefsByName()
	now := time.Now()
	resp := &runtimeapi.ListPodSandboxMetricsResponse{}
	for _, sb := range s.sandboxes.list() {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		out := &runtimeapi.PodSandboxMetrics{PodSandboxId: sb.ID}
		pod := &metricSet{defs: defs, ts: now.UnixNano(), labels: podMetricLabels(sb)}
		if ifaces, err := s.readPodNetwork(sb); err == nil {
			pod.addNetwork(ifaces)
		} else {
			s.log.Debug("pod network metrics", "sandbox", sb.ID, "err", err)
		}
		out.Metrics = pod.out
		for _, c := range s.containersOf(sb.ID) {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				out.ContainerMetrics = append(out.ContainerMetrics, s.containerMetrics(ctx, defs, now, sb, c))
			}
		}
		resp.PodMetrics = append(resp.PodMetrics, out)
	}
	return resp, nil
}

// readPodNetwork reads the interface counters of the pod's network: through
// its pause process, or else from a thread inside its pinned namespace
// (/proc/TID/net shows that thread's network namespace).
func (s *Server) readPodNetwork(sb sandbox) ([]cgroupstats.Interface, error) {
	if sb.Pid > 0 {
		return s.cfg.Cgroups.ReadNetwork(sb.Pid)
	}
	if sb.NetNS == "" {
		return nil, errors.New("no pod network namespace (host network)")
	}
	var ifaces []cgroupstats.Interface
	err := network.WithNetNS(sb.NetNS, func() error {
		var err error
		ifaces, err = s.cfg.Cgroups.ReadNetwork(unix.Gettid())
		return err
	})
	return ifaces, err
}

// containerMetrics samples one running container.
func (s *Server) containerMetrics(ctx context.Context, defs map[string]metricDef, now time.Time, sb sandbox, c container) *runtimeapi.ContainerMetrics {
	m := &metricSet{defs: defs, ts: now.UnixNano(), labels: containerMetricLabels(sb, c)}
	m.add("container_last_seen", uint64(now.Unix()))
	m.add("container_start_time_seconds", uint64(c.StartedAt/int64(time.Second)))
	if st, err := s.cfg.OCI.State(ctx, c.ID); err != nil || st.Pid <= 0 {
		s.log.Debug("container metrics: no process", "id", c.ID, "err", err)
	} else if sample, err := s.cfg.Cgroups.ReadPid(st.Pid); err != nil {
		s.log.Warn("container metrics: cgroups", "id", c.ID, "err", err)
	} else {
		m.addCgroup(sample)
	}
	if wl, ok := s.cfg.Images.(WritableLayers); ok {
		if dir := wl.WritableLayer(c.ID); dir != "" {
			if fs, err := cgroupstats.ReadFilesystem(dir); err == nil {
				m.addFilesystem(fs)
			} else {
				s.log.Debug("container metrics: writable layer", "id", c.ID, "err", err)
			}
		}
	}
	return &runtimeapi.ContainerMetrics{ContainerId: c.ID, Metrics: m.out}
}

// containerMetricLabels are the values of metricLabelKeys for a container.
func containerMetricLabels(sb sandbox, c container) []string {
	md := sb.Config.GetMetadata()
	return []string{c.Config.GetMetadata().GetName(), c.ID, c.Config.GetImage().GetImage(), c.ID, md.GetNamespace(), md.GetName()}
}

// podMetricLabels label pod-level series as cAdvisor labels the sandbox's.
func podMetricLabels(sb sandbox) []string {
	md := sb.Config.GetMetadata()
	return []string{"POD", sb.ID, "", sb.ID, md.GetNamespace(), md.GetName()}
}
