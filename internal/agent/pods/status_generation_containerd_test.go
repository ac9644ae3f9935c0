package pods

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The agent's status says which generation of the pod it answers: the
// pod's and each of its conditions' observedGeneration follow
// metadata.generation when the spec changes.
func TestStatusFollowsPodGeneration(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gen", Generation: 1},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{busybox("main", "sleep", "3600")}},
	}
	pod = h.create(pod)
	h.waitPod(pod, "Running and Ready at generation 1", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue &&
			observedGeneration(p) == "status 1, conditions 1"
	})

	// The fake API server keeps what it is given: the patch bumps the
	// generation itself, as kube-apiserver does on a spec change.
	patch := []byte(`{"metadata":{"generation":2},"spec":{"activeDeadlineSeconds":3600}}`)
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Patch(t.Context(), pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p := h.waitPod(pod, "status at generation 2", func(p *corev1.Pod) bool {
		return observedGeneration(p) == "status 2, conditions 2"
	})
	if p.Status.Phase != corev1.PodRunning || podCondition(p, corev1.PodReady) != corev1.ConditionTrue {
		t.Errorf("a spec change the pod keeps running through changed its state: %+v", p.Status)
	}
}

// observedGeneration sums up a pod's status generations: the pod's, and
// its conditions' when they all agree ("mixed" otherwise).
func observedGeneration(p *corev1.Pod) string {
	conds := "none"
	for i, c := range p.Status.Conditions {
		g := fmt.Sprint(c.ObservedGeneration)
		switch {
		case i == 0:
			conds = g
		case conds != g:
			conds = "mixed"
		}
	}
	return fmt.Sprintf("status %d, conditions %s", p.Status.ObservedGeneration, conds)
}
