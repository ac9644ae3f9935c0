package pods

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	kubeletdns "k8s.io/kubernetes/pkg/kubelet/network/dns"

	"github.com/berth/berth/internal/agent/podcgroup"
)

// sandboxConfig builds the CRI sandbox for pod, as the kubelet does.
func (m *Manager) sandboxConfig(pod *corev1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	dns, err := m.dnsConfig(pod)
	if err != nil {
		return nil, err
	}
	labels := podLabels(string(pod.UID), pod.Name, pod.Namespace)
	for k, v := range pod.Labels {
		if _, reserved := labels[k]; !reserved {
			labels[k] = v
		}
	}
	hostname, _ := podHostnameAndDomain(pod, m.cfg.ClusterDomain)
	if pod.Spec.HostNetwork {
		hostname = "" // the runtime keeps the node's hostname
	}
	security, err := sandboxSecurity(pod)
	if err != nil {
		return nil, err
	}
	if security.NamespaceOptions.UsernsOptions, err = m.userNamespace(pod); err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     hostname,
		LogDirectory: m.podLogDir(pod),
		DnsConfig:    dns,
		PortMappings: portMappings(pod),
		Labels:       labels,
		Annotations:  pod.Annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    cgroupParent(pod),
			SecurityContext: security,
			Sysctls:         sysctls(pod),
		},
	}, nil
}

func (m *Manager) podLogDir(pod *corev1.Pod) string {
	return filepath.Join(m.cfg.PodLogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

func portMappings(pod *corev1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := runtimeapi.Protocol_TCP
			switch p.Protocol {
			case corev1.ProtocolUDP:
				proto = runtimeapi.Protocol_UDP
			case corev1.ProtocolSCTP:
				proto = runtimeapi.Protocol_SCTP
			}
			out = append(out, &runtimeapi.PortMapping{Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
		}
	}
	return out
}

// qosClass is the pod's QoS class: the API server's when set, else computed
// by the upstream rules (simplified to cpu and memory).
func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	guaranteed, any := true, false
	all := append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if hasReq || hasLim {
				any = true
			}
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

// cgroupParent places the pod in the kubelet's cgroupfs hierarchy by QoS
// class; the agent removes it when the pod is gone (podcgroup.Cleaner).
func cgroupParent(pod *corev1.Pod) string {
	return podcgroup.Parent(qosClass(pod), pod.UID)
}

func namespaceOptions(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// sandboxSecurity is the sandbox's security context, as the kubelet's
// generatePodSandboxLinuxConfig: privileged when any container is, always
// the runtime's default seccomp profile (the pod's own applies to its
// containers), and the pod's user, groups and SELinux options.
func sandboxSecurity(pod *corev1.Pod) (*runtimeapi.LinuxSandboxSecurityContext, error) {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: namespaceOptions(pod),
		Privileged:       hasPrivilegedContainer(pod),
		Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc, nil
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	if psc.FSGroup != nil {
		sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
	}
	sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
	var err error
	if sc.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(psc); err != nil {
		return nil, configError{err}
	}
	sc.SelinuxOptions = runtimeSELinux(psc.SELinuxOptions)
	return sc, nil
}

// hasPrivilegedContainer reports whether any of the pod's containers,
// init and ephemeral ones included, is privileged.
func hasPrivilegedContainer(pod *corev1.Pod) bool {
	privileged := false
	podutil.VisitContainers(&pod.Spec, podutil.AllFeatureEnabledContainers(), func(c *corev1.Container, _ podutil.ContainerType) bool {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			privileged = true
			return false
		}
		return true
	})
	return privileged
}

// sysctls are the pod's sysctls, which admission has checked against the
// node's allowlist (SysctlAllowlist), named with dots as the kubelet sends
// them to the runtime ("kernel/shm_rmid_forced" is kernel.shm_rmid_forced).
func sysctls(pod *corev1.Pod) map[string]string {
	if pod.Spec.SecurityContext == nil || len(pod.Spec.SecurityContext.Sysctls) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		out[utilsysctl.NormalizeName(s.Name)] = s.Value
	}
	return out
}

// dnsConfig is the pod's resolv.conf as the kubelet writes it, from
// upstream's configurer: every dnsPolicy, the pod's dnsConfig merged in, and
// the kubelet's limits on search domains and nameservers. Without cluster
// DNS configured, ClusterFirst falls back to the host's resolver (with a
// warning event), as the kubelet does.
func (m *Manager) dnsConfig(pod *corev1.Pod) (*runtimeapi.DNSConfig, error) {
	var clusterDNS []net.IP
	for _, s := range m.cfg.ClusterDNS {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("cluster DNS address %q is not an IP address", s)
		}
		clusterDNS = append(clusterDNS, ip)
	}
	var nodeIPs []net.IP
	if ip := net.ParseIP(m.cfg.NodeIP); ip != nil {
		nodeIPs = append(nodeIPs, ip)
	}
	nodeRef := &corev1.ObjectReference{Kind: "Node", Name: m.cfg.NodeName, UID: types.UID(m.cfg.NodeName)}
	configurer := kubeletdns.NewConfigurer(m.dnsEventRecorder(), nodeRef, nodeIPs, clusterDNS, m.cfg.ClusterDomain, m.cfg.ResolvConf)
	// The configurer takes only its logger from the context.
	cfg, err := configurer.GetPodDNS(context.Background(), pod)
	if err != nil {
		return nil, fmt.Errorf("pod DNS configuration: %w", err)
	}
	return cfg, nil
}

// dnsEventRecorder is where the configurer reports pods whose DNS settings
// exceed the limits: the pods' event recorder once Run has made it.
func (m *Manager) dnsEventRecorder() record.EventRecorderLogger {
	if r, ok := m.recorder.(record.EventRecorderLogger); ok {
		return r
	}
	return &record.FakeRecorder{} // before Run (unit tests): events are dropped
}

// milliCPU returns q in millicores.
func milliCPU(q resource.Quantity) int64 { return q.MilliValue() }
