package nodeserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The labels the agent's pod workers put on every container and sandbox
// (the kubelet's, so crictl and tools read them too).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelContainerName = "io.kubernetes.container.name"
)

// errNotFound is a lookup miss; handlers answer 404.
type errNotFound struct{ what string }

func (e errNotFound) Error() string { return e.what + " not found" }

// containerFinder finds a pod's containers and sandbox in the runtime by
// their labels: the agent's own state lives there, not here.
type containerFinder struct {
	rt runtimeapi.RuntimeServiceClient
}

// container returns the newest instance of ns/pod/name, or with previous
// the one before it (the last terminated attempt, for `logs --previous`).
func (f containerFinder) container(ctx context.Context, ns, pod, name string, previous bool) (*runtimeapi.Container, error) {
	resp, err := f.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{labelPodNamespace: ns, labelPodName: pod, labelContainerName: name},
	}})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	cs := resp.GetContainers()
	// Newest first: attempts are numbered, creation times break ties.
	slices.SortFunc(cs, func(a, b *runtimeapi.Container) int {
		if d := int(b.GetMetadata().GetAttempt()) - int(a.GetMetadata().GetAttempt()); d != 0 {
			return d
		}
		return int(b.GetCreatedAt() - a.GetCreatedAt())
	})
	i := 0
	if previous {
		i = 1
	}
	if len(cs) <= i {
		what := fmt.Sprintf("container %q in pod %s/%s", name, ns, pod)
		if previous {
			what = "previous terminated " + what
		}
		return nil, errNotFound{what}
	}
	return cs[i], nil
}

// sandbox returns the ready sandbox of ns/pod.
func (f containerFinder) sandbox(ctx context.Context, ns, pod string) (*runtimeapi.PodSandbox, error) {
	resp, err := f.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{labelPodNamespace: ns, labelPodName: pod},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	if err != nil {
		return nil, fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	if len(resp.GetItems()) == 0 {
		return nil, errNotFound{fmt.Sprintf("running pod %s/%s", ns, pod)}
	}
	return resp.GetItems()[0], nil
}

// writeLookupError answers 404 for a miss and 500 for anything else.
func writeLookupError(w http.ResponseWriter, err error) {
	if _, ok := err.(errNotFound); ok {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
