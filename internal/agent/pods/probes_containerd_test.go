package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
)

func execProbe(cmd ...string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}, PeriodSeconds: 1, FailureThreshold: 1}
}

func containerReady(p *corev1.Pod, name string) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.Ready
		}
	}
	return false
}

func TestReadinessProbesGateReady(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	gated := busybox("gated", "sleep", "3600")
	gated.ReadinessProbe = execProbe("cat", "/tmp/ready")
	web := corev1.Container{Name: "web", Image: cri.Image(images.Httpd), Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}
	web.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}, PeriodSeconds: 1}
	web.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, PeriodSeconds: 1, FailureThreshold: 30}
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probed"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{gated, web}},
	})
	p := h.waitPod(pod, "with web ready through its HTTP probe", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && containerReady(p, "web")
	})
	if containerReady(p, "gated") || podCondition(p, corev1.PodReady) != corev1.ConditionFalse {
		t.Fatalf("gated container ready before its probe could pass: %+v", p.Status.ContainerStatuses)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "web" && (cs.Started == nil || !*cs.Started) {
			t.Fatalf("web ready but not started: %+v", cs)
		}
	}
	h.exec(h.containerID(p, "gated"), "touch", "/tmp/ready")
	h.waitPod(pod, "Ready once the gated probe passes", func(p *corev1.Pod) bool {
		return containerReady(p, "gated") && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	h.exec(h.containerID(p, "gated"), "rm", "/tmp/ready")
	h.waitPod(pod, "unready again when the probe fails", func(p *corev1.Pod) bool {
		return !containerReady(p, "gated") && podCondition(p, corev1.PodReady) == corev1.ConditionFalse
	})
}

func TestFailingLivenessProbeRestartsContainer(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	c := busybox("c", "sh", "-c", "touch /tmp/alive; exec sleep 3600")
	c.LivenessProbe = execProbe("test", "-f", "/tmp/alive")
	// sleep as PID 1 ignores SIGTERM: a short grace period keeps the kill short.
	grace := int64(1)
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{c}}})
	p := h.waitPod(pod, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && containerReady(p, "c") })
	first := h.containerID(p, "c")
	h.exec(first, "rm", "/tmp/alive")
	p = h.waitPod(pod, "restarted after failing its liveness probe", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount == 1 && cs.State.Running != nil
	})
	if h.containerID(p, "c") == first {
		t.Fatal("same container still running")
	}
	if last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ContainerID == "" {
		t.Fatalf("lastState = %+v, want the killed instance", p.Status.ContainerStatuses[0].LastTerminationState)
	}
}

// TestReadinessProbedAsSoonAsStarted: once the startup probe passes, the
// readiness probe runs at once, as the kubelet triggers it, not at its next
// period (an hour here).
func TestReadinessProbedAsSoonAsStarted(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	c := busybox("c", "sh", "-c", "sleep 2; touch /tmp/started; sleep 3600")
	c.StartupProbe = execProbe("cat", "/tmp/started")
	c.StartupProbe.FailureThreshold = 60
	c.ReadinessProbe = execProbe("true")
	c.ReadinessProbe.PeriodSeconds = 3600
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "started"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
	h.waitPod(pod, "ready once started, long before the readiness probe's hourly period", func(p *corev1.Pod) bool {
		return containerReady(p, "c")
	})
}

// TestFailedStartupProbeKillsWithItsOwnGracePeriod: a sidecar whose startup
// probe fails is killed with the probe's terminationGracePeriodSeconds, not
// the pod's hour, and restarted, as the kubelet does. Its sleep, PID 1,
// ignores SIGTERM, so only the probe's short grace lets it go.
func TestFailedStartupProbeKillsWithItsOwnGracePeriod(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	sidecar := busybox("sidecar", "sleep", "3600")
	sidecar.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	sidecar.StartupProbe = execProbe("cat", "/tmp/never")
	sidecar.StartupProbe.FailureThreshold = 2
	sidecar.StartupProbe.TerminationGracePeriodSeconds = new(int64(1))
	podGrace := int64(3600)
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "startup-grace"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &podGrace,
		InitContainers:                []corev1.Container{sidecar},
		Containers:                    []corev1.Container{busybox("main", "sleep", "3600")},
	}})
	h.waitPod(pod, "with its sidecar restarted after its startup probe failed", func(p *corev1.Pod) bool {
		return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].RestartCount >= 1
	})
}

// TestContainerRestartRuleRestartsInANeverPod: a container whose own rule
// restarts exit code 42 is restarted in a pod whose policy is Never, and
// the pod then succeeds, as the kubelet runs it (ContainerRestartRules).
func TestContainerRestartRuleRestartsInANeverPod(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	c := busybox("c", "sh", "-c", "test -f /scratch/once && exit 0; touch /scratch/once; exit 42")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	c.RestartPolicy = new(corev1.ContainerRestartPolicyNever)
	c.RestartPolicyRules = []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rules"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{c},
		Volumes:       []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}})
	p := h.waitPod(pod, "Succeeded after one restart for exit code 42", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if n := p.Status.ContainerStatuses[0].RestartCount; n != 1 {
		t.Errorf("restart count %d, want 1", n)
	}
}
