package pods

import (
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func unitManager(t *testing.T, cfg Config) *Manager {
	cfg.DataDir = t.TempDir()
	return New(cfg, fake.NewClientset(), nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func TestQOSClassAndCgroupParent(t *testing.T) {
	res := func(req, lim string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		if req != "" {
			r.Requests[corev1.ResourceCPU], r.Requests[corev1.ResourceMemory] = resource.MustParse(req), resource.MustParse(req+"Mi")
		}
		if lim != "" {
			r.Limits[corev1.ResourceCPU], r.Limits[corev1.ResourceMemory] = resource.MustParse(lim), resource.MustParse(lim+"Mi")
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		res      corev1.ResourceRequirements
		want     corev1.PodQOSClass
		wantPath string
	}{
		{"none", res("", ""), corev1.PodQOSBestEffort, "/kubepods/besteffort/podU"},
		{"equal", res("1", "1"), corev1.PodQOSGuaranteed, "/kubepods/podU"},
		{"limit only", res("", "1"), corev1.PodQOSGuaranteed, "/kubepods/podU"},
		{"request below limit", res("1", "2"), corev1.PodQOSBurstable, "/kubepods/burstable/podU"},
		{"request only", res("1", ""), corev1.PodQOSBurstable, "/kubepods/burstable/podU"},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: tc.res}}}}
		pod.UID = "U"
		if got := qosClass(pod); got != tc.want {
			t.Errorf("%s: qos = %s, want %s", tc.name, got, tc.want)
		}
		if got := cgroupParent(pod); got != tc.wantPath {
			t.Errorf("%s: cgroup parent = %s, want %s", tc.name, got, tc.wantPath)
		}
	}
}

func TestLinuxResources(t *testing.T) {
	c := &corev1.Container{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}
	r := linuxResources(c)
	if r.CpuShares != 256 || r.CpuQuota != 50000 || r.CpuPeriod != 100000 || r.MemoryLimitInBytes != 64<<20 {
		t.Fatalf("resources = %+v", r)
	}
	if r := linuxResources(&corev1.Container{}); r.CpuShares != 2 || r.CpuQuota != 0 || r.MemoryLimitInBytes != 0 {
		t.Fatalf("best-effort resources = %+v", r)
	}
}

func TestSandboxConfigFromPod(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.test\noptions ndots:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := unitManager(t, Config{PodLogDir: "/var/log/pods", ResolvConf: resolv})
	share := true
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Hostname: "h1", ShareProcessNamespace: &share, HostIPC: true,
		Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}},
	}}
	pod.Name, pod.Namespace, pod.UID = "p", "ns", "U"
	pod.Labels = map[string]string{"app": "x", labelPodName: "spoofed"}
	cfg, err := m.sandboxConfig(pod, 2)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hostname != "h1" || cfg.Metadata.Attempt != 2 || cfg.LogDirectory != "/var/log/pods/ns_p_U" {
		t.Errorf("config = %+v", cfg)
	}
	if cfg.Labels[labelPodName] != "p" || cfg.Labels["app"] != "x" || cfg.Labels[labelPodUID] != "U" {
		t.Errorf("labels = %v (the pod cannot override the agent's labels)", cfg.Labels)
	}
	if len(cfg.PortMappings) != 1 || cfg.PortMappings[0].HostPort != 8080 || cfg.PortMappings[0].Protocol != runtimeapi.Protocol_TCP {
		t.Errorf("port mappings = %v", cfg.PortMappings)
	}
	ns := cfg.Linux.SecurityContext.NamespaceOptions
	if ns.Pid != runtimeapi.NamespaceMode_POD || ns.Ipc != runtimeapi.NamespaceMode_NODE || ns.Network != runtimeapi.NamespaceMode_POD {
		t.Errorf("namespaces = %+v", ns)
	}
	if !slices.Equal(cfg.DnsConfig.Servers, []string{"192.0.2.53"}) || !slices.Equal(cfg.DnsConfig.Searches, []string{"example.test"}) {
		t.Errorf("dns = %+v, want the host's resolver without cluster DNS", cfg.DnsConfig)
	}

	m.cfg.ClusterDNS = []string{"10.96.0.10"}
	cfg, _ = m.sandboxConfig(pod, 0)
	if !slices.Equal(cfg.DnsConfig.Servers, []string{"10.96.0.10"}) || cfg.DnsConfig.Searches[0] != "ns.svc.cluster.local" {
		t.Errorf("cluster dns = %+v", cfg.DnsConfig)
	}
}

func TestEnvResolutionErrorsAreConfigErrors(t *testing.T) {
	m := unitManager(t, Config{})
	pod := &corev1.Pod{}
	pod.Namespace = "default"
	c := &corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"},
	}}}}
	_, err := m.envFor(t.Context(), pod, c)
	var ce configError
	if err == nil || !errors.As(err, &ce) {
		t.Fatalf("envFor = %v, want a configError", err)
	}
	opt := true
	c.Env[0].ValueFrom.ConfigMapKeyRef.Optional = &opt
	env, err := m.envFor(t.Context(), pod, c)
	if err != nil || len(env) != 0 {
		t.Fatalf("optional missing ref: env %v, err %v; want unset and no error", env, err)
	}
}

func TestPhase(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	ok := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}
	bad := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}
	creating := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}}}
	crashloop := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff}}, LastTerminationState: bad.State}
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		cs     []corev1.ContainerStatus
		want   corev1.PodPhase
	}{
		{corev1.RestartPolicyAlways, []corev1.ContainerStatus{running, creating}, corev1.PodPending},
		{corev1.RestartPolicyAlways, []corev1.ContainerStatus{running, crashloop}, corev1.PodRunning},
		{corev1.RestartPolicyAlways, []corev1.ContainerStatus{crashloop}, corev1.PodRunning},
		{corev1.RestartPolicyNever, []corev1.ContainerStatus{ok, ok}, corev1.PodSucceeded},
		{corev1.RestartPolicyNever, []corev1.ContainerStatus{ok, bad}, corev1.PodFailed},
		{corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{ok}, corev1.PodSucceeded},
		{corev1.RestartPolicyNever, []corev1.ContainerStatus{running, bad}, corev1.PodRunning},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy}}
		if got := phase(pod, corev1.PodStatus{ContainerStatuses: tc.cs}); got != tc.want {
			t.Errorf("%s %v: phase %s, want %s", tc.policy, tc.cs, got, tc.want)
		}
	}
}

// A container's own restart policy and rules decide whether its exit ends
// the pod, as the kubelet's getPhase weighs them (ContainerRestartRules).
func TestPhaseWeighsContainerRestartRules(t *testing.T) {
	exited := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	restarting := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	rules := corev1.Container{Name: "c", RestartPolicy: new(corev1.ContainerRestartPolicyNever), RestartPolicyRules: []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}}
	onFailure := corev1.Container{Name: "c", RestartPolicy: new(corev1.ContainerRestartPolicyOnFailure)}
	for _, tc := range []struct {
		name string
		c    corev1.Container
		cs   corev1.ContainerStatus
		want corev1.PodPhase
	}{
		{"a rule's exit code restarts it in a Never pod", rules, restarting(42), corev1.PodRunning},
		{"another exit code ends it by its Never policy", rules, exited(1), corev1.PodFailed},
		{"its own OnFailure restarts a failure in a Never pod", onFailure, restarting(1), corev1.PodRunning},
		{"its own OnFailure ends on success", onFailure, exited(0), corev1.PodSucceeded},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{tc.c}}}
		if got := phase(pod, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{tc.cs}}); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A sysctl named with slashes reaches the runtime named with dots, as the
// kubelet sends it (kernel/shm_rmid_forced is kernel.shm_rmid_forced).
func TestSandboxSysctlsNamedWithDots(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
		{Name: "kernel/shm_rmid_forced", Value: "1"}, {Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"},
	}}}}
	got := sysctls(pod)
	want := map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_local_port_range": "1024 65535"}
	if !maps.Equal(got, want) {
		t.Errorf("sysctls %v, want %v", got, want)
	}
}
