// Package kubeletparity compares the agent's minimal copies of kubelet
// code with upstream's. It holds only tests, in their own package, so that
// only they link k8s.io/kubernetes/pkg/kubelet/sysctl and, through
// pkg/kubelet/lifecycle, the scheduler, which the agent itself must not.
package kubeletparity

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	kubeletsysctl "k8s.io/kubernetes/pkg/kubelet/sysctl"

	"github.com/berth/berth/internal/agent/pods"
)

func TestSafeSysctlsAreTheKubelets(t *testing.T) {
	upstream := kubeletsysctl.SafeSysctlAllowlist(context.Background())
	ours := pods.SafeSysctls(pods.KernelVersion())
	if !slices.Equal(ours, upstream) {
		t.Fatalf("safe sysctls on this kernel:\n agent   %q\n kubelet %q", ours, upstream)
	}
}

func TestSysctlAdmissionIsTheKubelets(t *testing.T) {
	patterns := append(kubeletsysctl.SafeSysctlAllowlist(context.Background()), "net.core.*", "kernel.msg*", "kernel.sem", "fs.mqueue.*", "user.max_user_namespaces")
	upstream, err := kubeletsysctl.NewAllowlist(patterns)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := pods.NewSysctlAllowlist(patterns)
	if err != nil {
		t.Fatal(err)
	}
	sysctls := []string{
		"net.ipv4.ip_local_port_range", "net/ipv4/tcp_syncookies", "kernel.shm_rmid_forced", "net.core.somaxconn",
		"kernel.msgmax", "kernel.sem", "fs.mqueue.msg_max", "user.max_user_namespaces", "vm.swappiness", "kernel.domainname",
	}
	for _, s := range sysctls {
		for _, hostNet := range []bool{false, true} {
			for _, hostIPC := range []bool{false, true} {
				for _, hostUsers := range []*bool{nil, ptrTo(false)} {
					pod := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, HostUsers: hostUsers,
						SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: s, Value: "1"}}}}}
					want := upstream.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: pod})
					got := ours.Admit(pod)
					if want.Admit != (got == "") || !want.Admit && (want.Reason != "SysctlForbidden" || want.Message != got) {
						t.Errorf("%s hostNetwork=%v hostIPC=%v hostUsers=%v: agent %q, kubelet %+v", s, hostNet, hostIPC, hostUsers, got, want)
					}
				}
			}
		}
	}
	for _, bad := range []string{"vm.swappiness", "net.core.*x", "Net.core"} {
		_, upErr := kubeletsysctl.NewAllowlist([]string{bad})
		_, ourErr := pods.NewSysctlAllowlist([]string{bad})
		if upErr == nil || ourErr == nil || upErr.Error() != ourErr.Error() {
			t.Errorf("pattern %q: agent %v, kubelet %v", bad, ourErr, upErr)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
