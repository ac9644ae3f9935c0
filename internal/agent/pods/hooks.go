package pods

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runHook runs a postStart or preStop handler against container id; the
// handler gets at most timeout.
func (m *Manager) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, h *corev1.LifecycleHandler, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		return m.execSucceeds(ctx, id, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		p := pod.DeepCopy()
		p.Status.PodIP = podIP
		_, err := m.probeHTTP(ctx, p, c, h.HTTPGet) // a hook has no use for a redirect's warning
		return err
	case h.Sleep != nil:
		if !sleep(ctx, time.Duration(h.Sleep.Seconds)*time.Second) {
			return ctx.Err()
		}
		return nil
	}
	return fmt.Errorf("lifecycle handler has no action")
}

// postStartTimeout bounds a postStart hook, which upstream gives no timeout
// of its own; the kubelet's is the pod's grace period at most.
func postStartTimeout(pod *corev1.Pod) time.Duration {
	return time.Duration(max(gracePeriod(pod), 2)) * time.Second
}

// postStart runs c's postStart hook after the container started; on failure
// the container is killed and restarted by its policy, as upstream.
func (s *syncRun) postStart(ctx context.Context, c *corev1.Container, id string) {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return
	}
	if err := s.m.runHook(ctx, s.pod, c, id, s.podIP(ctx), c.Lifecycle.PostStart, postStartTimeout(s.pod)); err != nil {
		s.m.event(s.pod, corev1.EventTypeWarning, "FailedPostStartHook", fmt.Sprintf("PostStartHook failed: %v", err))
		if _, err := s.m.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: gracePeriod(s.pod)}); err != nil {
			s.m.log.Warn("stop container after failed postStart", "id", id, "err", err)
		}
	}
}

func (s *syncRun) podIP(ctx context.Context) string {
	resp, err := s.m.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: s.sandbox.Id})
	if err != nil {
		return ""
	}
	return resp.GetStatus().GetNetwork().GetIp()
}

// preStop runs the preStop hooks of the pod's running containers and
// sidecars in parallel, as the kubelet runs them, each within what is left
// of the grace period, and returns how much of the grace period remains
// for SIGTERM.
func (m *Manager) preStop(ctx context.Context, pod *corev1.Pod, st podState, podIP string) int64 {
	grace := gracePeriod(pod)
	start := time.Now()
	done := make(chan struct{})
	pending := 0
	for _, c := range containersAndSidecars(pod) {
		l := st.latest(c.Name)
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || l == nil || l.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		pending++
		go func() {
			defer func() { done <- struct{}{} }()
			if err := m.runHook(ctx, pod, c, l.Id, podIP, c.Lifecycle.PreStop, time.Duration(grace)*time.Second); err != nil {
				m.event(pod, corev1.EventTypeWarning, "FailedPreStopHook", fmt.Sprintf("PreStopHook failed: %v", err))
			}
		}()
	}
	for range pending {
		<-done
	}
	// The kubelet gives SIGTERM whatever the hooks left, at least 2 s.
	left := grace - int64(time.Since(start)/time.Second)
	return max(left, 2)
}

// execSucceeds runs cmd in container id (exec hooks and probes) and fails
// unless it exits 0 within timeout.
func (m *Manager) execSucceeds(ctx context.Context, id string, cmd []string, timeout time.Duration) error {
	resp, err := m.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout / time.Second)})
	if err != nil {
		return err
	}
	if resp.ExitCode != 0 {
		return fmt.Errorf("command %v exited with %d: %s%s", cmd, resp.ExitCode, resp.Stdout, resp.Stderr)
	}
	return nil
}
