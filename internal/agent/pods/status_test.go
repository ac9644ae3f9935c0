package pods

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Before any container runs, every init and regular container's status
// says it has not started (false, never absent), as the kubelet's prober
// manager reports it: e2e's WaitForPodContainerStarted reads it as given.
func TestWaitingContainersReportNotStarted(t *testing.T) {
	m := unitManager(t, Config{NodeName: testNode})
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-waiting"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: &always}, {Name: "setup"}},
			Containers:     []corev1.Container{{Name: "main"}},
		},
	}
	st, err := m.podStatus(context.Background(), pod, podState{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := append(st.InitContainerStatuses, st.ContainerStatuses...)
	if len(all) != 3 {
		t.Fatalf("%d container statuses, want 3", len(all))
	}
	for _, cs := range all {
		if cs.State.Waiting == nil {
			t.Errorf("%s: state %+v, want waiting", cs.Name, cs.State)
		}
		if cs.Started == nil || *cs.Started {
			t.Errorf("%s: started %v, want false", cs.Name, cs.Started)
		}
	}
}
