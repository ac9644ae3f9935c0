package pods

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
)

// terminate stops a pod being deleted: preStop hooks (the sidecars' too)
// run first, then the containers are stopped (stopContainers) within what
// is left of the grace period; then the sandbox goes, the final status is reported and
// the pod object is deleted for good (grace 0, only this UID).
func (m *Manager) terminate(ctx context.Context, pod *corev1.Pod, st podState) (syncResult, error) {
	m.prober.stopPod(pod.UID)
	m.stopContainers(ctx, pod, st, m.preStop(ctx, pod, st, pod.Status.PodIP))
	m.stopSandboxes(ctx, st)
	st, err := observe(ctx, m.rt, string(pod.UID))
	if err != nil {
		return syncResult{}, err
	}
	status, err := m.podStatus(ctx, pod, st, nil)
	if err != nil {
		return syncResult{}, err
	}
	if err := m.patchStatus(ctx, pod, status); err != nil && !apierrors.IsNotFound(err) {
		return syncResult{}, err
	}
	m.removeSandboxes(ctx, st)
	m.removePodCgroup(pod.UID)
	m.removePodDir(string(pod.UID))
	err = m.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return syncResult{}, fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m.log.Info("pod terminated", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
	return syncResult{done: true}, nil
}

// stopContainers stops the pod's running containers as the kubelet
// terminates a pod: all but the sidecars at once, then the sidecars one at
// a time in reverse order, so that they serve the others to the end. Each
// gets SIGTERM and what is left of grace seconds (at least 2, the
// kubelet's minimal shutdown window) before the runtime kills it.
func (m *Manager) stopContainers(ctx context.Context, pod *corev1.Pod, st podState, grace int64) {
	start := time.Now()
	var sidecars []string
	for i := range pod.Spec.InitContainers {
		if podutil.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			sidecars = append(sidecars, pod.Spec.InitContainers[i].Name)
		}
	}
	var others []string
	for name := range st.containers {
		if !slices.Contains(sidecars, name) {
			others = append(others, name)
		}
	}
	m.stopNamed(ctx, pod, st, others, grace)
	for i := len(sidecars) - 1; i >= 0; i-- {
		left := max(grace-int64(time.Since(start)/time.Second), 2)
		m.stopNamed(ctx, pod, st, sidecars[i:i+1], left)
	}
}

// stopNamed gives the running instances of the named containers SIGTERM
// and grace seconds (CRI StopContainer's timeout) before the runtime kills
// them, all at once, and waits for them.
func (m *Manager) stopNamed(ctx context.Context, pod *corev1.Pod, st podState, names []string, grace int64) {
	var wg sync.WaitGroup
	for _, name := range names {
		for _, c := range st.containers[name] {
			if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING && c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
				continue
			}
			m.event(pod, corev1.EventTypeNormal, "Killing", "Stopping container "+name)
			wg.Go(func() {
				if _, err := m.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id, Timeout: grace}); err != nil {
					m.log.Warn("stop container", "id", c.Id, "err", err)
				}
			})
		}
	}
	wg.Wait()
}

// cleanup removes what the runtime still holds of a pod the API no longer
// has (deleted meanwhile, or never known to this agent).
func (m *Manager) cleanup(ctx context.Context, uid types.UID, st podState) (syncResult, error) {
	defer m.removePodDir(string(uid))
	// Also when no sandbox is left: the collector may have removed it.
	defer m.removePodCgroup(uid)
	m.prober.stopPod(uid)
	if len(st.sandboxes) == 0 {
		return syncResult{done: true}, nil
	}
	m.log.Info("removing pod no longer in the API", "uid", uid)
	m.stopSandboxes(ctx, st)
	m.removeSandboxes(ctx, st)
	return syncResult{done: true}, nil
}

func (m *Manager) stopSandboxes(ctx context.Context, st podState) {
	for _, sb := range st.sandboxes {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if _, err := m.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			m.log.Warn("stop sandbox", "id", sb.Id, "err", err)
		}
	}
}

func (m *Manager) removeSandboxes(ctx context.Context, st podState) {
	for _, sb := range st.sandboxes {
		if _, err := m.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			m.log.Warn("remove sandbox", "id", sb.Id, "err", err)
		}
	}
}

// removePodCgroup removes the pod's cgroup once its sandboxes are gone: the
// runtime never does. One still in use stays for the collector's sweep.
func (m *Manager) removePodCgroup(uid types.UID) {
	if _, err := m.cfg.Cgroups.RemovePod(uid); err != nil {
		m.log.Warn("remove pod cgroup", "podUID", uid, "err", err)
	}
}
