package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/pkg/security/apparmor"
	"k8s.io/utils/ptr"
)

// running waits until the pod's only container runs and returns its ID.
func (h *harness) running(pod *corev1.Pod) string {
	h.t.Helper()
	p := h.waitPod(pod, "running", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	return h.containerID(p, p.Spec.Containers[0].Name)
}

// rejected waits for the kubelet's admission rejection of pod and checks
// that the runtime never got a sandbox for it.
func (h *harness) rejected(pod *corev1.Pod, reason, message string) {
	h.t.Helper()
	h.waitPod(pod, "rejected with "+reason, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == reason && p.Status.Message == message
	})
	sbs, err := h.ctd.Client.Runtime.ListPodSandbox(h.t.Context(), &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: string(pod.UID)}},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(sbs.Items) != 0 {
		h.t.Fatalf("rejected pod %s got %d sandboxes", pod.Name, len(sbs.Items))
	}
}

func seccompMode(h *harness, id string) string {
	for _, line := range strings.Split(h.exec(id, "cat", "/proc/1/status"), "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v)
		}
	}
	h.t.Fatalf("no Seccomp line in /proc/1/status of %s", id)
	return ""
}

// TestSeccompProfileIsEnforced: RuntimeDefault puts the container's
// process under a seccomp filter (mode 2); no profile leaves it
// unconfined, and --seccomp-default makes the default a filter.
func TestSeccompProfileIsEnforced(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	confined := busybox("c", "sleep", "3600")
	confined.SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "seccomp"}, Spec: corev1.PodSpec{Containers: []corev1.Container{confined}}})
	if got := seccompMode(h, h.running(pod)); got != "2" {
		t.Errorf("RuntimeDefault container: Seccomp %s, want 2 (filter)", got)
	}
	plain := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1.PodSpec{Containers: []corev1.Container{busybox("c", "sleep", "3600")}}})
	if got := seccompMode(h, h.running(plain)); got != "0" {
		t.Errorf("container without a profile: Seccomp %s, want 0 (unconfined, the kubelet's default)", got)
	}
}

func TestSeccompDefaultFlag(t *testing.T) {
	h := newHarness(t)
	h.cfg.SeccompDefault = true
	h.startAgent()
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1.PodSpec{Containers: []corev1.Container{busybox("c", "sleep", "3600")}}})
	if got := seccompMode(h, h.running(pod)); got != "2" {
		t.Errorf("--seccomp-default: Seccomp %s, want 2", got)
	}
}

// TestRunAsNonRoot: the busybox image runs as root, so runAsNonRoot alone
// keeps the container from being created; with runAsUser 1000 it runs as
// 1000.
func TestRunAsNonRoot(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	nonRoot := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rootimage"}, Spec: corev1.PodSpec{
		SecurityContext: nonRoot, Containers: []corev1.Container{busybox("c", "sleep", "3600")}}})
	want := `container has runAsNonRoot and image will run as root (pod: "rootimage_default(uid-rootimage)", container: c)`
	h.waitPod(pod, "in CreateContainerConfigError", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reasonCreateConfigError && w.Message == want
	})
	if n := len(h.containers(pod.UID)); n != 0 {
		t.Fatalf("%d containers created for a runAsNonRoot pod whose image runs as root", n)
	}

	asUser := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "asuser"}, Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)},
		Containers:      []corev1.Container{busybox("c", "sleep", "3600")}}})
	if got := strings.TrimSpace(h.exec(h.running(asUser), "id", "-u")); got != "1000" {
		t.Errorf("runAsUser 1000: id -u = %s", got)
	}
}

func sysctlSpec(name, value string) corev1.PodSpec {
	return corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: name, Value: value}}},
		Containers:      []corev1.Container{busybox("c", "sleep", "3600")},
	}
}

// TestSysctlAdmission: an unsafe sysctl is refused before the pod gets a
// sandbox; a safe one is set in the pod's namespaces.
func TestSysctlAdmission(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	unsafe := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unsafe"}, Spec: sysctlSpec("net.core.somaxconn", "1024")})
	h.rejected(unsafe, "SysctlForbidden", `Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted`)

	safe := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "safe"}, Spec: sysctlSpec("net.ipv4.ip_unprivileged_port_start", "100")})
	if got := strings.TrimSpace(h.exec(h.running(safe), "cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start")); got != "100" {
		t.Errorf("safe sysctl: %s, want 100", got)
	}
}

// TestAllowedUnsafeSysctls: --allowed-unsafe-sysctls lets the named
// patterns through.
func TestAllowedUnsafeSysctls(t *testing.T) {
	h := newHarness(t)
	list, err := NewSysctlAllowlist(append(SafeSysctls(KernelVersion()), "net.core.*"))
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Sysctls = list
	h.startAgent()
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unsafe"}, Spec: sysctlSpec("net.core.somaxconn", "1234")})
	if got := strings.TrimSpace(h.exec(h.running(pod), "cat", "/proc/sys/net/core/somaxconn")); got != "1234" {
		t.Errorf("allowed unsafe sysctl: %s, want 1234", got)
	}
}

// TestAppArmorRefusedWithoutAppArmor: on a host without AppArmor (this
// one), a pod asking for a profile is rejected as the kubelet rejects it;
// one asking for Unconfined runs.
func TestAppArmorRefusedWithoutAppArmor(t *testing.T) {
	if err := apparmor.NewValidator().ValidateHost(); err == nil {
		t.Skip("this host enforces AppArmor")
	}
	h := newHarness(t)
	h.startAgent()
	c := busybox("c", "sleep", "3600")
	c.SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "apparmor"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
	h.rejected(pod, "AppArmor", "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host")

	c.SecurityContext.AppArmorProfile.Type = corev1.AppArmorProfileTypeUnconfined
	unconfined := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unconfined"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
	h.running(unconfined)
}

// TestPodForAnotherOSRejected: a pod whose spec.os names another
// operating system is rejected before anything starts, as the kubelet
// rejects it.
func TestPodForAnotherOSRejected(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "windows"}, Spec: corev1.PodSpec{
		OS: &corev1.PodOS{Name: corev1.Windows}, Containers: []corev1.Container{busybox("c", "sleep", "3600")},
	}})
	h.rejected(pod, "PodOSNotSupported", "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS")
}
