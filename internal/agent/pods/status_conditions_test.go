package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/ptr"
)

func runningStatus(names ...string) corev1.PodStatus {
	st := corev1.PodStatus{Phase: corev1.PodRunning}
	for _, n := range names {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: n, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		})
	}
	return st
}

func TestConditionsKeepWhatTheAgentDoesNotOwn(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	disruption := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "PreemptionByScheduler", Message: "preempted", LastTransitionTime: then}
	custom := corev1.PodCondition{Type: "example.com/Custom", Status: corev1.ConditionFalse, LastTransitionTime: then}
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			disruption, custom,
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: then},
		}},
	}
	got := conditions(pod, runningStatus("c"), true, now)

	for _, want := range []corev1.PodCondition{disruption, custom} {
		_, c := podutil.GetPodConditionFromList(got, want.Type)
		if c == nil || *c != want {
			t.Errorf("condition %s = %+v, want it kept as %+v", want.Type, c, want)
		}
	}
	_, ready := podutil.GetPodConditionFromList(got, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionTrue || !ready.LastTransitionTime.Equal(&then) {
		t.Errorf("Ready = %+v, want True with its old transition time %v", ready, then)
	}
	_, initialized := podutil.GetPodConditionFromList(got, corev1.PodInitialized)
	if initialized == nil || !initialized.LastTransitionTime.Equal(&now) {
		t.Errorf("Initialized = %+v, want it new at %v", initialized, now)
	}
	if n := len(got); n != 7 {
		t.Errorf("got %d conditions, want 7 (2 kept, 5 the agent's): %+v", n, got)
	}
}

func TestReadyWaitsForReadinessGates(t *testing.T) {
	now := metav1.Now()
	gate := corev1.PodConditionType("example.com/gate")
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Name: "c"}},
		ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}},
	}}
	for _, tc := range []struct {
		name       string
		gate       *corev1.ConditionStatus
		wantStatus corev1.ConditionStatus
		wantReason string
	}{
		{"gate missing", nil, corev1.ConditionFalse, "ReadinessGatesNotReady"},
		{"gate false", ptr.To(corev1.ConditionFalse), corev1.ConditionFalse, "ReadinessGatesNotReady"},
		{"gate true", ptr.To(corev1.ConditionTrue), corev1.ConditionTrue, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			if tc.gate != nil {
				p.Status.Conditions = []corev1.PodCondition{{Type: gate, Status: *tc.gate}}
			}
			got := conditions(p, runningStatus("c"), true, now)
			_, ready := podutil.GetPodConditionFromList(got, corev1.PodReady)
			_, containers := podutil.GetPodConditionFromList(got, corev1.ContainersReady)
			if ready == nil || ready.Status != tc.wantStatus || ready.Reason != tc.wantReason {
				t.Errorf("Ready = %+v, want %s with reason %q", ready, tc.wantStatus, tc.wantReason)
			}
			if containers == nil || containers.Status != corev1.ConditionTrue {
				t.Errorf("ContainersReady = %+v, want True whatever the gates say", containers)
			}
		})
	}
}
