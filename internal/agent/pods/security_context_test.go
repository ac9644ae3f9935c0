package pods

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// kubeletDefaultMasked and kubeletDefaultReadonly are what the kubelet
// sends for procMount Default (pkg/securitycontext/util.go), written out
// here so a change upstream shows as a failing test; the thermal_throttle
// entries depend on the host and are checked by prefix.
var (
	kubeletDefaultMasked = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	kubeletDefaultReadonly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

func unconfined() *runtimeapi.SecurityProfile {
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

func runtimeDefault() *runtimeapi.SecurityProfile {
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
}

// withAppArmor is an unconfined-seccomp context with an AppArmor profile in
// both the field and the deprecated name the kubelet still sends.
func withAppArmor(p *runtimeapi.SecurityProfile, deprecated string) *runtimeapi.LinuxContainerSecurityContext {
	sc := &runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), Apparmor: p}
	//lint:ignore SA1019 the kubelet sends it, for runtimes that read only the name.
	sc.ApparmorProfile = deprecated
	return sc
}

// TestContainerSecurityMatchesTheKubelet checks each field of the CRI
// security context against what the kubelet v1.37 sends for the same pod.
func TestContainerSecurityMatchesTheKubelet(t *testing.T) {
	root := int64(0)
	unmasked := corev1.UnmaskedProcMount
	strict := corev1.SupplementalGroupsPolicyStrict
	type in struct {
		psc         *corev1.PodSecurityContext
		csc         *corev1.SecurityContext
		annotations map[string]string
		seccompDef  bool
		imageUID    *int64
		imageName   string
	}
	for _, tc := range []struct {
		name string
		in   in
		// want holds the fields under test; masked and read-only paths
		// are the kubelet's defaults unless set.
		want *runtimeapi.LinuxContainerSecurityContext
	}{
		{"nothing asked: unconfined, the image's user", in{imageUID: &root},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), RunAsUser: &runtimeapi.Int64Value{}}},
		{"--seccomp-default", in{seccompDef: true, imageUID: &root},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: runtimeDefault(), RunAsUser: &runtimeapi.Int64Value{}}},
		{"pod RuntimeDefault", in{psc: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: runtimeDefault()}},
		{"container Unconfined wins over pod RuntimeDefault", in{
			psc: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			csc: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined()}},
		{"container Localhost under the profile root", in{csc: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")}}},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/berth/agent/seccomp/profiles/audit.json"}}},
		{"users and groups: container wins, fsGroup first", in{
			psc: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{4000, 5000}, SupplementalGroupsPolicy: &strict},
			csc: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1500)}, imageUID: &root},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), RunAsUser: &runtimeapi.Int64Value{Value: 1500}, RunAsGroup: &runtimeapi.Int64Value{Value: 3000},
				SupplementalGroups: []int64{2000, 4000, 5000}, SupplementalGroupsPolicy: runtimeapi.SupplementalGroupsPolicy_Strict}},
		{"image user name", in{imageName: "nobody"},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), RunAsUsername: "nobody"}},
		{"privilege escalation, read-only root, capabilities", in{csc: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}}}},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), NoNewPrivs: true, ReadonlyRootfs: true,
				Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}}}},
		{"privileged", in{csc: &corev1.SecurityContext{Privileged: ptr.To(true)}},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), Privileged: true}},
		{"SELinux: container wins", in{
			psc: &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0:c1"}},
			csc: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c2"}}},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), SelinuxOptions: &runtimeapi.SELinuxOption{Level: "s0:c2"}}},
		{"SELinux from the pod", in{psc: &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), SelinuxOptions: &runtimeapi.SELinuxOption{Type: "spc_t"}}},
		{"procMount Unmasked", in{csc: &corev1.SecurityContext{ProcMount: &unmasked}},
			&runtimeapi.LinuxContainerSecurityContext{Seccomp: unconfined(), MaskedPaths: []string{}, ReadonlyPaths: []string{}}},
		{"AppArmor: container field", in{csc: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("k8s-deny-write")}}},
			withAppArmor(&runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny-write"}, "localhost/k8s-deny-write")},
		{"AppArmor: deprecated annotation before the pod field", in{
			psc:         &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}},
			annotations: map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default"}},
			withAppArmor(runtimeDefault(), "runtime/default")},
		{"AppArmor: pod field", in{psc: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}},
			withAppArmor(unconfined(), "unconfined")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manager{cfg: Config{DataDir: "/var/lib/berth/agent", SeccompDefault: tc.in.seccompDef}}
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.in.psc, Containers: []corev1.Container{{Name: "c", SecurityContext: tc.in.csc}}}}
			pod.Annotations = tc.in.annotations
			got, err := m.containerSecurity(pod, &pod.Spec.Containers[0], tc.in.imageUID, tc.in.imageName)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.NamespaceOptions = namespaceOptions(pod)
			checkKubeletMasks(t, got, want)
			got.MaskedPaths, got.ReadonlyPaths, want.MaskedPaths, want.ReadonlyPaths = nil, nil, nil, nil
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("security context (-kubelet +agent):\n%s", diff)
			}
		})
	}
}

// checkKubeletMasks compares the /proc masks: want's when it sets them
// (non-nil), else the kubelet's defaults.
func checkKubeletMasks(t *testing.T, got, want *runtimeapi.LinuxContainerSecurityContext) {
	t.Helper()
	if want.MaskedPaths != nil {
		if len(got.MaskedPaths) != len(want.MaskedPaths) || len(got.ReadonlyPaths) != len(want.ReadonlyPaths) {
			t.Errorf("masked %q read-only %q, want %q and %q", got.MaskedPaths, got.ReadonlyPaths, want.MaskedPaths, want.ReadonlyPaths)
		}
		return
	}
	if len(got.MaskedPaths) < len(kubeletDefaultMasked) || !cmp.Equal(got.MaskedPaths[:len(kubeletDefaultMasked)], kubeletDefaultMasked) {
		t.Errorf("masked paths %q, want the kubelet's %q", got.MaskedPaths, kubeletDefaultMasked)
	}
	for _, p := range got.MaskedPaths[min(len(got.MaskedPaths), len(kubeletDefaultMasked)):] {
		if !strings.HasPrefix(p, "/sys/devices/system/cpu/cpu") {
			t.Errorf("unexpected masked path %q", p)
		}
	}
	if !cmp.Equal(got.ReadonlyPaths, kubeletDefaultReadonly) {
		t.Errorf("read-only paths %q, want the kubelet's %q", got.ReadonlyPaths, kubeletDefaultReadonly)
	}
}

func TestSeccompLocalhostRefusals(t *testing.T) {
	m := &Manager{cfg: Config{DataDir: "/var/lib/berth/agent", SeccompProfileRoot: "/etc/berth/seccomp"}}
	for _, tc := range []struct {
		profile *string
		want    string
	}{
		{nil, "localhostProfile must be set if seccompProfile type is Localhost."},
		{ptr.To(""), "localhostProfile must be set if seccompProfile type is Localhost."},
		{ptr.To("../../../etc/shadow"), `seccomp localhostProfile "../../../etc/shadow" is outside the node's seccomp profile root /etc/berth/seccomp`},
		{ptr.To(".."), `seccomp localhostProfile ".." is outside the node's seccomp profile root /etc/berth/seccomp`},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", SecurityContext: &corev1.SecurityContext{
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: tc.profile}}}}}}
		_, err := m.containerSecurity(pod, &pod.Spec.Containers[0], nil, "")
		var ce configError
		if !errors.As(err, &ce) || err.Error() != tc.want {
			t.Errorf("profile %v: err %v, want configError %q", ptr.Deref(tc.profile, "<nil>"), err, tc.want)
		}
	}
	// A name that stays inside the root, even through "..", is joined.
	p, err := m.localhostSeccomp("a/../b.json")
	if err != nil || p.LocalhostRef != filepath.Join("/etc/berth/seccomp", "b.json") {
		t.Errorf("a/../b.json: %v, %v", p, err)
	}
}

func TestVerifyRunAsNonRootAsTheKubelet(t *testing.T) {
	uid := func(v int64) *int64 { return &v }
	pod := func(psc *corev1.PodSecurityContext, csc *corev1.SecurityContext) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: psc, Containers: []corev1.Container{{Name: "app", SecurityContext: csc}}}}
		p.Name, p.Namespace, p.UID = "web", "prod", "u-1"
		return p
	}
	nonRoot := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		uid      *int64
		username string
		want     string // "" admits
	}{
		{"not asked", pod(nil, nil), uid(0), "", ""},
		{"asked off by the container", pod(nonRoot, &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}), uid(0), "", ""},
		{"root image", pod(nonRoot, nil), uid(0), "", `container has runAsNonRoot and image will run as root (pod: "web_prod(u-1)", container: app)`},
		{"root image, asked by the container", pod(nil, &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}), uid(0), "", `container has runAsNonRoot and image will run as root (pod: "web_prod(u-1)", container: app)`},
		{"runAsUser 1000 over a root image", pod(&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}, nil), uid(0), "", ""},
		{"runAsUser 0", pod(nonRoot, &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}), uid(1000), "", `container's runAsUser breaks non-root policy (pod: "web_prod(u-1)", container: app)`},
		{"image user 1000", pod(nonRoot, nil), uid(1000), "", ""},
		{"image user name", pod(nonRoot, nil), nil, "nobody", `container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: "web_prod(u-1)", container: app)`},
		{"image user out of range", pod(nonRoot, nil), uid(1 << 40), "", `container has runAsNonRoot and image has an invalid user id (1099511627776). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive (pod: "web_prod(u-1)", container: app)`},
	} {
		err := verifyRunAsNonRoot(tc.pod, &tc.pod.Spec.Containers[0], tc.uid, tc.username)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want admitted", tc.name, err)
			}
			continue
		}
		var ce configError
		if !errors.As(err, &ce) || err.Error() != tc.want {
			t.Errorf("%s: %v, want configError %q", tc.name, err, tc.want)
		}
	}
}

func TestSandboxSecurityAsTheKubelet(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{
			RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{3000},
			SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1,c2"},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
		},
		InitContainers: []corev1.Container{{Name: "setup", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
		Containers:     []corev1.Container{{Name: "c"}},
	}}
	got, err := sandboxSecurity(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: namespaceOptions(pod),
		Privileged:       true, // an init container is
		// Always the runtime's default: the pod's profile is its containers'.
		Seccomp:            runtimeDefault(),
		RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
		RunAsGroup:         &runtimeapi.Int64Value{Value: 1000},
		SupplementalGroups: []int64{2000, 3000},
		SelinuxOptions:     &runtimeapi.SELinuxOption{Level: "s0:c1,c2"},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("sandbox security (-kubelet +agent):\n%s", diff)
	}
}
