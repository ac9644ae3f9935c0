package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resources is requests (cpu, memory) and limits (cpu, memory).
func resources(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
	}
}

// TestResizeInPlaceDefersAndRefusesAsTheKubelet resizes a running pod as
// pods/resize would: an allocated resize changes the running container's
// cgroup in place, or restarts the container whose resizePolicy asks for
// it; a resize larger than the node is Infeasible, one that does not fit
// beside the node's other pods is Deferred until they leave, and an agent
// restarted meanwhile keeps what it allocated. The statuses report what was
// allocated and applied.
func TestResizeInPlaceDefersAndRefusesAsTheKubelet(t *testing.T) {
	h := newHarness(t)
	if _, err := h.client.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("10")}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := h.startAgent()
	inPlace, restarting := busybox("in-place", "sleep", "3600"), busybox("restarting", "sleep", "3600")
	inPlace.Resources = resources("100m", "32Mi", "200m", "64Mi")
	restarting.Resources = resources("100m", "32Mi", "200m", "64Mi")
	restarting.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resized", Generation: 1},
		Spec: corev1.PodSpec{Containers: []corev1.Container{inPlace, restarting}}})
	p := h.waitPod(pod, "running as allocated", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && statusResourcesAre(p, "in-place", inPlace.Resources)
	})
	before := h.containerID(p, "in-place")
	h.wantCgroup(before, "20000", "67108864")

	// Allocated: in place for one container, a restart for the other.
	resized := resources("150m", "32Mi", "300m", "96Mi")
	h.resize(pod, 2, resized)
	p = h.waitPod(pod, "resized at generation 2", func(p *corev1.Pod) bool {
		return p.Status.ObservedGeneration == 2 && statusResourcesAre(p, "in-place", resized) && statusResourcesAre(p, "restarting", resized) &&
			podCondition(p, corev1.PodResizePending) == "" && podCondition(p, corev1.PodResizeInProgress) == ""
	})
	if id := h.containerID(p, "in-place"); id != before || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("in-place container: id %s restarts %d, want %s not restarted", id, p.Status.ContainerStatuses[0].RestartCount, before)
	}
	if p.Status.ContainerStatuses[1].RestartCount != 1 {
		t.Errorf("container whose memory resizePolicy is RestartContainer: %d restarts, want 1", p.Status.ContainerStatuses[1].RestartCount)
	}
	h.wantCgroup(before, "30000", "100663296")

	// Larger than the node (two containers of 3 cpu): Infeasible.
	h.resize(pod, 3, resources("3", "32Mi", "4", "96Mi"))
	h.waitResizePending(pod, corev1.PodReasonInfeasible, "Node didn't have enough capacity: cpu, requested: 6000, capacity: 2000")

	// Beside another pod's 1.5 cpu: Deferred, also across an agent restart,
	// until that pod goes.
	filler := busybox("filler", "sleep", "3600")
	filler.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
	fillerPod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "filler"}, Spec: corev1.PodSpec{Containers: []corev1.Container{filler}}})
	h.waitPod(fillerPod, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	deferred := resources("1", "32Mi", "1", "96Mi")
	h.resize(pod, 4, deferred)
	h.waitResizePending(pod, corev1.PodReasonDeferred, "Node didn't have enough resource: cpu, requested: 2000, used: 1500, capacity: 2000")
	stop()
	h.startAgent()
	p = h.waitResizePending(pod, corev1.PodReasonDeferred, "Node didn't have enough resource: cpu")
	if !statusResourcesAre(p, "in-place", resized) {
		t.Errorf("after the agent restarted with a resize deferred: %+v, want the resources allocated before", p.Status.ContainerStatuses[0].Resources)
	}
	h.wantCgroup(before, "30000", "100663296")
	if err := h.client.CoreV1().Pods("default").Delete(t.Context(), "filler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitPod(pod, "deferred resize allocated once the other pod left", func(p *corev1.Pod) bool {
		return statusResourcesAre(p, "in-place", deferred) && podCondition(p, corev1.PodResizePending) == ""
	})
	h.wantCgroup(before, "100000", "100663296")
}

// resize changes both containers' resources and the pod's generation, as
// pods/resize does (the fake API server keeps what it is given).
func (h *harness) resize(pod *corev1.Pod, generation int64, r corev1.ResourceRequirements) {
	h.t.Helper()
	p, err := h.client.CoreV1().Pods(pod.Namespace).Get(h.t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	p.Generation = generation
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Resources = *r.DeepCopy()
	}
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Update(h.t.Context(), p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// waitResizePending waits for PodResizePending with reason and a message
// starting with msg.
func (h *harness) waitResizePending(pod *corev1.Pod, reason, msg string) *corev1.Pod {
	h.t.Helper()
	return h.waitPod(pod, "resize "+reason, func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending && c.Reason == reason && strings.HasPrefix(c.Message, msg) {
				return c.ObservedGeneration == p.Generation
			}
		}
		return false
	})
}

// statusResourcesAre reports whether container name's status says r was
// allocated and applied.
func statusResourcesAre(p *corev1.Pod, name string, r corev1.ResourceRequirements) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.Resources != nil && equality.Semantic.DeepEqual(*cs.Resources, r) &&
				equality.Semantic.DeepEqual(cs.AllocatedResources, r.Requests)
		}
	}
	return false
}

// wantCgroup checks container id's CPU quota and memory limit as its own
// cgroup holds them (cgroup v1 or v2).
func (h *harness) wantCgroup(id, quota, memory string) {
	h.t.Helper()
	got := strings.Fields(h.exec(id, "sh", "-c",
		"{ cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us; } | cut -d' ' -f1; "+
			"cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"))
	if len(got) != 2 || got[0] != quota || got[1] != memory {
		h.t.Errorf("container %s cgroup: quota and memory limit %v, want %s %s", id, got, quota, memory)
	}
}
