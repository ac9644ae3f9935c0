package pods

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// runtimeClassSyncWait bounds how long Run waits for the RuntimeClass
// cache before starting pods: a pod whose class is not cached yet only
// fails its sandbox once and is retried after the back-off.
const runtimeClassSyncWait = 10 * time.Second

// startRuntimeClasses starts the kubelet's RuntimeClass manager (its own
// informer over the node's client) and waits, within runtimeClassSyncWait,
// for its first list.
func (m *Manager) startRuntimeClasses(ctx context.Context) {
	m.runtimeClasses.Start(ctx.Done())
	waitCtx, cancel := context.WithTimeout(ctx, runtimeClassSyncWait)
	defer cancel()
	m.runtimeClasses.WaitForCacheSync(waitCtx.Done())
	if waitCtx.Err() != nil && ctx.Err() == nil {
		m.log.Warn("RuntimeClasses not listed yet; pods naming one wait for them", "after", runtimeClassSyncWait)
	}
}

// runtimeHandler is the CRI runtime handler pod's sandbox runs with: its
// RuntimeClass's handler, or the default ("") without one. A class that
// does not exist (deleted since admission) fails the sandbox, as the
// kubelet's.
func (m *Manager) runtimeHandler(pod *corev1.Pod) (string, error) {
	handler, err := m.runtimeClasses.LookupRuntimeHandler(pod.Spec.RuntimeClassName)
	if err != nil {
		return "", fmt.Errorf("runtime handler of RuntimeClass %q: %w", *pod.Spec.RuntimeClassName, err)
	}
	return handler, nil
}
