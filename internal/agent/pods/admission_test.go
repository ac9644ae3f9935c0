package pods

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
)

// appArmorHost plays a node's AppArmor support.
type appArmorHost struct{ err error }

func (h appArmorHost) Validate(pod *corev1.Pod) error {
	for _, c := range pod.Spec.Containers {
		if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil && c.SecurityContext.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
			return h.err
		}
	}
	return nil
}
func (h appArmorHost) ValidateHost() error { return h.err }

func sysctlPod(hostNetwork bool, sysctls ...string) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: hostNetwork, SecurityContext: &corev1.PodSecurityContext{}}}
	for _, s := range sysctls {
		pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: s, Value: "1"})
	}
	return pod
}

func TestAdmitSysctls(t *testing.T) {
	safe, err := NewSysctlAllowlist(SafeSysctls(version.MustParseGeneric("6.1")))
	if err != nil {
		t.Fatal(err)
	}
	withUnsafe, err := NewSysctlAllowlist(append(SafeSysctls(version.MustParseGeneric("6.1")), "net.core.*", "kernel.msgmax"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		list *SysctlAllowlist
		pod  *corev1.Pod
		want string
	}{
		{"none", safe, &corev1.Pod{}, ""},
		{"safe", safe, sysctlPod(false, "net.ipv4.ip_local_port_range", "kernel.shm_rmid_forced"), ""},
		{"safe, slash form", safe, sysctlPod(false, "net/ipv4/tcp_syncookies"), ""},
		{"unsafe", safe, sysctlPod(false, "net.ipv4.tcp_syncookies", "net.core.somaxconn"), `forbidden sysctl: "net.core.somaxconn" not allowlisted`},
		{"unsafe allowed by pattern", withUnsafe, sysctlPod(false, "net.core.somaxconn"), ""},
		{"unsafe allowed by name", withUnsafe, sysctlPod(false, "kernel.msgmax"), ""},
		{"net sysctl with host network", safe, sysctlPod(true, "net.ipv4.ip_local_port_range"), `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
	} {
		m := &Manager{sysctls: tc.list, appArmor: appArmorHost{}}
		r := m.admit(tc.pod)
		switch {
		case tc.want == "" && r != nil:
			t.Errorf("%s: rejected %+v", tc.name, *r)
		case tc.want != "" && (r == nil || r.Reason != "SysctlForbidden" || r.Message != tc.want):
			t.Errorf("%s: %+v, want SysctlForbidden %q", tc.name, r, tc.want)
		}
	}
}

func TestSafeSysctlsFollowTheKernel(t *testing.T) {
	old := SafeSysctls(version.MustParseGeneric("4.4"))
	if len(old) != 6 {
		t.Errorf("kernel 4.4: %v, want only the 5 ungated ones and ip_local_reserved_ports", old)
	}
	if got := SafeSysctls(nil); len(got) != 5 {
		t.Errorf("unknown kernel: %v, want the ungated ones", got)
	}
	if got := SafeSysctls(version.MustParseGeneric("6.1")); len(got) != len(safeSysctls) {
		t.Errorf("kernel 6.1: %d sysctls, want all %d", len(got), len(safeSysctls))
	}
}

func TestBadUnsafeSysctlPatternsAreRefused(t *testing.T) {
	for pattern, want := range map[string]string{
		"vm.swappiness": `the sysctls "vm.swappiness" are not known to be namespaced`,
		"net.core.*x":   `sysctl "net.core.*x" must have at most 253 characters and match regex ` + sysctlPatternFmt,
		"Net.core":      `sysctl "Net.core" must have at most 253 characters and match regex ` + sysctlPatternFmt,
	} {
		if _, err := NewSysctlAllowlist([]string{pattern}); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", pattern, err, want)
		}
	}
}

func TestAdmitAppArmor(t *testing.T) {
	m := &Manager{sysctls: DefaultSysctlAllowlist(), appArmor: appArmorHost{errors.New("AppArmor is not enabled on the host")}}
	confined := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", SecurityContext: &corev1.SecurityContext{
		AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("p")}}}}}}
	confined.Status.Phase = corev1.PodPending
	r := m.admit(confined)
	if r == nil || r.Reason != "AppArmor" || r.Message != "Cannot enforce AppArmor: AppArmor is not enabled on the host" {
		t.Errorf("confined pod: %+v, want the kubelet's AppArmor rejection", r)
	}
	// As the kubelet, a pod already running is not checked again.
	confined.Status.Phase = corev1.PodRunning
	if r := m.admit(confined); r != nil {
		t.Errorf("running pod rejected: %+v", *r)
	}
}
