package pods

import (
	"context"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/berth/berth/internal/fit"
)

// In-place resize, as the kubelet carries it out: the agent allocates each
// pod's containers their resources when it first runs the pod; a resize of
// the spec (pods/resize) is allocated only once the node has room for it,
// else the pod reports PodResizePending (Deferred: room may come;
// Infeasible: the node is too small). An allocated resize is applied to the
// running containers through the runtime (UpdateContainerResources), or by
// restarting a container whose resizePolicy asks for it, and each container
// status reports what was allocated and what the runtime applied.
//
// The kubelet's allocation manager (pkg/kubelet/allocation) is not linked:
// it brings the kubelet's status manager, container manager and admission
// handlers (287 packages more in berth-agent); the agent decides on its own
// allocation record and internal/fit, the same check it admits pods with.

// resizePending is a resize the node has not allocated: Deferred or
// Infeasible, with the kubelet's message.
type resizePending struct{ reason, message string }

// allocate returns pod as the node runs it (its containers' resources as
// allocated) after deciding any resize of its spec, and the resize left
// pending, if any. A pod seen for the first time is allocated what it asks.
func (m *Manager) allocate(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, *resizePending, error) {
	allocated, ok, err := m.allocs.get(pod.UID)
	if err != nil {
		return pod, nil, err
	}
	desired := specAllocation(pod)
	if !ok {
		return pod, nil, m.allocs.set(pod.UID, desired)
	}
	if allocated.equal(desired) {
		return pod, nil, nil
	}
	pending, err := m.admitResize(ctx, pod)
	if err != nil || pending != nil {
		return allocated.apply(pod), pending, err
	}
	if err := m.allocs.set(pod.UID, desired); err != nil {
		return allocated.apply(pod), nil, err
	}
	m.log.Info("pod resize allocated", "pod", pod.Namespace+"/"+pod.Name)
	return pod, nil, nil
}

// admitResize decides a resize as the kubelet's allocation manager does:
// Infeasible when the pod's new requests exceed the node's allocatable
// CPU or memory, Deferred when they do not fit beside what the node's other
// pods were allocated.
func (m *Manager) admitResize(ctx context.Context, pod *corev1.Pod) (*resizePending, error) {
	node, err := m.client.CoreV1().Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("node %s for a resize: %w", m.cfg.NodeName, err)
	}
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	alloc := node.Status.Allocatable
	cpu, mem := want.Cpu().MilliValue(), want.Memory().Value()
	switch cpuCap, memCap := alloc.Cpu().MilliValue(), alloc.Memory().Value(); {
	case mem > memCap:
		return &resizePending{corev1.PodReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", mem, memCap)}, nil
	case cpu > cpuCap:
		return &resizePending{corev1.PodReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", cpu, cpuCap)}, nil
	}
	// Checked as the spec asks: the status still describes the resize
	// decided before (an Infeasible one would count as allocated).
	desired := *pod
	desired.Status = corev1.PodStatus{}
	if r := fit.AdmitBound(&desired, node, m.othersUsage(pod)); r != nil {
		return &resizePending{corev1.PodReasonDeferred, r.Message}, nil
	}
	return nil, nil
}

// othersUsage is what the node's other running pods were allocated.
func (m *Manager) othersUsage(pod *corev1.Pod) fit.Usage {
	var used fit.Usage
	for _, obj := range m.store.List() {
		other, ok := obj.(*corev1.Pod)
		if !ok || other.UID == pod.UID || isTerminal(other.Status.Phase) {
			continue
		}
		asRun := *m.allocs.cached(other.UID).apply(other)
		asRun.Status = corev1.PodStatus{} // counted as allocated, not by its status
		used = used.Add(&asRun)
	}
	return used
}

// resizeActuation is what applying a pod's allocation to its running
// containers came to in one sync.
type resizeActuation struct {
	applied []string // containers whose resources changed in place
	failed  []string // why a container could not be changed
}

// actuateResize brings each running container's resources to what the pod
// was allocated: in place, or by a restart where the container's
// resizePolicy asks for one for a resource that changed.
func (s *syncRun) actuateResize(ctx context.Context) {
	for _, c := range containersAndSidecars(s.pod) {
		latest := s.state.latest(c.Name)
		if latest == nil || latest.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		have, want := latest.GetResources().GetLinux(), linuxResources(c)
		if have == nil || sameResources(have, want) {
			continue // a runtime that reports no resources cannot be compared
		}
		if restartForResize(c, have, want) {
			s.replace(ctx, c, latest, fmt.Sprintf("Container %s resize requires restart", c.Name))
			continue
		}
		if _, err := s.m.rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: latest.Id, Linux: want}); err != nil {
			s.resize.failed = append(s.resize.failed, fmt.Sprintf("container %s: %v", c.Name, err))
			s.requeueIn(backoffInitial)
			continue
		}
		s.resize.applied = append(s.resize.applied, c.Name)
	}
	if len(s.resize.applied) > 0 && len(s.resize.failed) == 0 {
		s.m.event(s.pod, corev1.EventTypeNormal, "ResizeCompleted", "Pod resize completed: "+strings.Join(s.resize.applied, ", "))
	}
}

func sameResources(a, b *runtimeapi.LinuxContainerResources) bool {
	return a.GetCpuShares() == b.GetCpuShares() && a.GetCpuQuota() == b.GetCpuQuota() &&
		a.GetMemoryLimitInBytes() == b.GetMemoryLimitInBytes()
}

// restartForResize reports whether a changed resource's resizePolicy is
// RestartContainer.
func restartForResize(c *corev1.Container, have, want *runtimeapi.LinuxContainerResources) bool {
	cpuChanged := have.GetCpuShares() != want.GetCpuShares() || have.GetCpuQuota() != want.GetCpuQuota()
	memChanged := have.GetMemoryLimitInBytes() != want.GetMemoryLimitInBytes()
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy != corev1.RestartContainer {
			continue
		}
		if p.ResourceName == corev1.ResourceCPU && cpuChanged || p.ResourceName == corev1.ResourceMemory && memChanged {
			return true
		}
	}
	return false
}

// resizeConditions are the pod's PodResizePending and PodResizeInProgress
// conditions, as the kubelet reports them, keeping the transition times of
// ones that held already.
func resizeConditions(pod *corev1.Pod, pending *resizePending, act resizeActuation, now metav1.Time) []corev1.PodCondition {
	var out []corev1.PodCondition
	add := func(t corev1.PodConditionType, reason, message string) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: now,
			ObservedGeneration: podutil.CalculatePodConditionObservedGeneration(&pod.Status, pod.Generation, t)}
		for _, old := range pod.Status.Conditions {
			if old.Type == t && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	if pending != nil {
		add(corev1.PodResizePending, pending.reason, pending.message)
	}
	if len(act.failed) > 0 {
		add(corev1.PodResizeInProgress, corev1.PodReasonError, strings.Join(act.failed, "; "))
	}
	return out
}

// The kubelet's conversions of cgroup values back to resources
// (pkg/kubelet/cm, which the agent does not link: it brings cAdvisor and
// the device managers), and its floors below which a value is reported as
// allocated rather than as applied.
const (
	minMilliCPULimit = 10
	minQuota         = minMilliCPULimit * cpuPeriod / 1000
)

func sharesToMilliCPU(shares int64) int64 {
	if shares < minShares {
		return 0
	}
	return int64(math.Ceil(float64(shares*1000) / float64(sharesUnit)))
}

// statusResources is the resources a container status reports: what was
// allocated, with the CPU and memory the runtime applied in its place
// where the runtime reports them, as the kubelet's
// convertContainerStatusResources.
func statusResources(c *corev1.Container, latest *runtimeapi.ContainerStatus) *corev1.ResourceRequirements {
	out := c.Resources.DeepCopy()
	applied := latest.GetResources().GetLinux()
	if latest.State != runtimeapi.ContainerState_CONTAINER_RUNNING || applied == nil {
		return out
	}
	if out.Limits != nil {
		if applied.CpuQuota > 0 && applied.CpuPeriod > 0 {
			milli := applied.CpuQuota * 1000 / applied.CpuPeriod
			if milli > minMilliCPULimit || out.Limits.Cpu().MilliValue() > minMilliCPULimit {
				out.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
			}
		}
		if applied.MemoryLimitInBytes > 0 {
			out.Limits[corev1.ResourceMemory] = *resource.NewQuantity(applied.MemoryLimitInBytes, resource.BinarySI)
		}
	}
	if out.Requests != nil && applied.CpuShares > 0 {
		milli := sharesToMilliCPU(applied.CpuShares)
		if milli > minShares || out.Requests.Cpu().MilliValue() > minShares {
			out.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	return out
}
