package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Sidecars (init containers with restartPolicy Always), as the kubelet
// runs them: started in their place among the init containers, the next
// one waits only for them to start, they run beside the containers (which
// see what they wrote), count for readiness, and a pod whose containers
// completed succeeds with its sidecars stopped.
func TestSidecarRunsBesideTheContainersUntilTheyComplete(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	sidecar := busybox("sidecar", "sh", "-c", "echo up > /shared/sidecar; exec sleep 3600")
	sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	sidecar.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	after := busybox("after", "sh", "-c", "test -s /shared/sidecar")
	after.VolumeMounts = sidecar.VolumeMounts
	main := busybox("main", "sh", "-c", "test -s /shared/sidecar && sleep 2")
	main.VolumeMounts = sidecar.VolumeMounts
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "with-sidecar"},
		Spec: corev1.PodSpec{
			RestartPolicy:  corev1.RestartPolicyNever,
			Volumes:        []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{sidecar, after},
			Containers:     []corev1.Container{main},
		},
	})
	running := h.waitPod(pod, "Running with its sidecar ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	side := running.Status.InitContainerStatuses[0]
	if side.State.Running == nil || !side.Ready || side.Started == nil || !*side.Started {
		t.Errorf("sidecar status while the pod runs: %+v", side)
	}
	if podCondition(running, corev1.PodInitialized) != corev1.ConditionTrue {
		t.Errorf("pod with a running sidecar and a completed init container is not Initialized: %+v", running.Status.Conditions)
	}
	done := h.waitPod(pod, "Succeeded once its container completed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if cs := done.Status.ContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Errorf("main container: %+v (it saw no file the sidecar wrote?)", cs)
	}
	if ic := done.Status.InitContainerStatuses[1]; ic.State.Terminated == nil || ic.State.Terminated.ExitCode != 0 {
		t.Errorf("init container after the sidecar: %+v", ic)
	}
}
