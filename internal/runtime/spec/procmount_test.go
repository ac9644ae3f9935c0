package spec

import (
	"reflect"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet sends its full lists for procMount Default and empty ones for
// Unmasked (allowed only with hostUsers: false).
func TestProcMasksFollowTheCRI(t *testing.T) {
	kubeletMasked := []string{"/proc/asound", "/proc/kcore", "/sys/firmware"}
	kubeletReadonly := []string{"/proc/bus", "/proc/sys"}
	for _, tc := range []struct {
		name                     string
		userns                   bool
		masked, readonly         []string
		wantMasked, wantReadonly []string
	}{
		{"default lists replace the runtime's", false, kubeletMasked, kubeletReadonly, kubeletMasked, kubeletReadonly},
		{"default lists in a user namespace", true, kubeletMasked, kubeletReadonly, kubeletMasked, kubeletReadonly},
		{"unmasked in the pod's user namespace", true, nil, nil, []string{}, []string{}},
		{"none sent, host users: the runtime's defaults", false, nil, nil, defaultMaskedPaths, defaultReadonlyPaths},
		{"only masked sent keeps the default read-only paths", false, []string{"/proc/kcore"}, nil, []string{"/proc/kcore"}, defaultReadonlyPaths},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			if tc.userns {
				in.Sandbox = usernsPod(podUserns())
				in.UserNSPath, in.NetNSPath, in.UTSNSPath, in.IPCNSPath = "/run/userns/s1", "/run/netns/s1", "/run/utsns/s1", "/run/ipcns/s1"
			}
			in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{MaskedPaths: tc.masked, ReadonlyPaths: tc.readonly}
			s := mustGenerate(t, in)
			if !reflect.DeepEqual(s.Linux.MaskedPaths, tc.wantMasked) || !reflect.DeepEqual(s.Linux.ReadonlyPaths, tc.wantReadonly) {
				t.Errorf("masked %q read-only %q, want %q and %q", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths, tc.wantMasked, tc.wantReadonly)
			}
		})
	}
}

func TestRuntimeDefaultSeccompIsApplied(t *testing.T) {
	in := testInput(t)
	in.Container.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}
	if s := mustGenerate(t, in); s.Linux.Seccomp == nil || len(s.Linux.Seccomp.Syscalls) == 0 {
		t.Fatalf("RuntimeDefault gave seccomp %+v, want moby's default profile", s.Linux.Seccomp)
	}
	in.Container.Linux.SecurityContext.Seccomp.ProfileType = runtimeapi.SecurityProfile_Unconfined
	if s := mustGenerate(t, in); s.Linux.Seccomp != nil {
		t.Fatalf("Unconfined gave a seccomp filter")
	}
}
