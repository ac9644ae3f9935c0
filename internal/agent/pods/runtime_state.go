package pods

import (
	"context"
	"fmt"
	"sort"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podState is what the runtime holds of one pod: its sandboxes (newest
// first) and, per container name, its instances (newest attempt first).
type podState struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers map[string][]*runtimeapi.ContainerStatus
}

// readySandbox returns the newest sandbox if it is ready.
func (s podState) readySandbox() *runtimeapi.PodSandbox {
	if len(s.sandboxes) > 0 && s.sandboxes[0].State == runtimeapi.PodSandboxState_SANDBOX_READY {
		return s.sandboxes[0]
	}
	return nil
}

// latest returns the newest instance of container name, or nil.
func (s podState) latest(name string) *runtimeapi.ContainerStatus {
	if l := s.containers[name]; len(l) > 0 {
		return l[0]
	}
	return nil
}

// previous returns the instance before the newest one, or nil.
func (s podState) previous(name string) *runtimeapi.ContainerStatus {
	if l := s.containers[name]; len(l) > 1 {
		return l[1]
	}
	return nil
}

// observe reads the pod's sandboxes and containers from the runtime by the
// pod UID label.
func observe(ctx context.Context, rt runtimeapi.RuntimeServiceClient, uid string) (podState, error) {
	st := podState{containers: map[string][]*runtimeapi.ContainerStatus{}}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: uid}},
	})
	if err != nil {
		return st, fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	st.sandboxes = sbs.Items
	sort.Slice(st.sandboxes, func(i, j int) bool {
		a, b := st.sandboxes[i], st.sandboxes[j]
		if a.Metadata.Attempt != b.Metadata.Attempt {
			return a.Metadata.Attempt > b.Metadata.Attempt
		}
		return a.CreatedAt > b.CreatedAt
	})
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labelPodUID: uid}},
	})
	if err != nil {
		return st, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	for _, c := range cs.Containers {
		status, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil {
			return st, fmt.Errorf("status of container %s: %w", c.Id, err)
		}
		name := c.Metadata.Name
		st.containers[name] = append(st.containers[name], status.Status)
	}
	for _, l := range st.containers {
		sort.Slice(l, func(i, j int) bool {
			if l[i].Metadata.Attempt != l[j].Metadata.Attempt {
				return l[i].Metadata.Attempt > l[j].Metadata.Attempt
			}
			return l[i].CreatedAt > l[j].CreatedAt
		})
	}
	return st, nil
}
