package pods

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	"k8s.io/kubernetes/pkg/util/kernel"
)

// This file is a minimal copy of the kubelet's sysctl admission
// (k8s.io/kubernetes/pkg/kubelet/sysctl): importing that package links
// pkg/kubelet/lifecycle and through it the scheduler into the agent.
// sysctl_allowlist_test.go imports upstream's package and checks that the
// safe list and the admission decisions are the same.

// reasonSysctlForbidden is the kubelet's rejection reason for a pod asking
// for a sysctl the node does not allow.
const reasonSysctlForbidden = "SysctlForbidden"

// safeSysctl is a sysctl that is namespaced and isolated, so any pod may
// set it; kernel is the first kernel version where it is namespaced.
type safeSysctl struct {
	name   string
	kernel string
}

// safeSysctls is the kubelet's safe list (pkg/kubelet/sysctl/safe_sysctls.go),
// with the versions of pkg/util/kernel/constants.go.
var safeSysctls = []safeSysctl{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", kernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", kernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", kernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", kernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", kernel: "4.5"},
	{name: "net.ipv4.tcp_rmem", kernel: "4.15"},
	{name: "net.ipv4.tcp_wmem", kernel: "4.15"},
	{name: "net.ipv4.tcp_slow_start_after_idle", kernel: "4.15"},
	{name: "net.ipv4.tcp_notsent_lowat", kernel: "4.6"},
}

// SafeSysctls returns the safe sysctls namespaced on a kernel of version
// kernel; nil (version unknown) leaves out every version-gated one, as the
// kubelet does.
func SafeSysctls(kernel *version.Version) []string {
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.kernel)) {
			out = append(out, s.name)
		}
	}
	return out
}

// DefaultSysctlAllowlist allows the safe sysctls of the running kernel.
func DefaultSysctlAllowlist() *SysctlAllowlist {
	w, err := NewSysctlAllowlist(SafeSysctls(KernelVersion()))
	if err != nil {
		panic(fmt.Sprintf("the safe sysctls are valid patterns: %v", err))
	}
	return w
}

// KernelVersion is the running kernel's version, nil when it cannot be
// read (then no version-gated sysctl is safe).
func KernelVersion() *version.Version {
	v, err := kernel.GetVersion()
	if err != nil {
		return nil
	}
	return v
}

// sysctlMaxLength and sysctlPatternRegexp are the API's limits on a sysctl
// pattern (pkg/apis/core/validation SysctlMaxLength, pkg/apis/policy/validation
// SysctlContainSlashPatternFmt), which the kubelet applies to its flag.
const sysctlMaxLength = 253

const sysctlPatternFmt = `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`

var sysctlPatternRegexp = regexp.MustCompile("^" + sysctlPatternFmt + "$")

// SysctlAllowlist admits the sysctls of a pod: names and prefixes (from
// patterns ending in *) known to be namespaced, each with its namespace.
type SysctlAllowlist struct {
	sysctls  map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewSysctlAllowlist builds the allowlist from sysctl names and patterns
// ending in * (the safe list plus --allowed-unsafe-sysctls), refusing any
// that is malformed or not known to be namespaced, as the kubelet does.
func NewSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{sysctls: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, s := range patterns {
		if len(s) > sysctlMaxLength || !sysctlPatternRegexp.MatchString(s) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", s, sysctlMaxLength, sysctlPatternFmt)
		}
		ns, sysctlOrPrefix, prefixed := utilsysctl.GetNamespace(s)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", sysctlOrPrefix)
		}
		if prefixed {
			w.prefixes[sysctlOrPrefix] = ns
		} else {
			w.sysctls[sysctlOrPrefix] = ns
		}
	}
	return w, nil
}

// validate allows an allowlisted sysctl unless the pod shares the host
// namespace it belongs to.
func (w *SysctlAllowlist) validate(sysctl string, hostNet, hostIPC, hostUsers bool) error {
	sysctl = utilsysctl.NormalizeName(sysctl)
	ns, found := w.sysctls[sysctl]
	if !found {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(sysctl, p) {
				ns, found = pns, true
				break
			}
		}
	}
	if !found {
		return fmt.Errorf("%q not allowlisted", sysctl)
	}
	if ns == utilsysctl.IPCNamespace && hostIPC || ns == utilsysctl.NetNamespace && hostNet || ns == utilsysctl.UserNamespace && hostUsers {
		return fmt.Errorf("%q not allowed with host %s enabled", sysctl, ns)
	}
	return nil
}

// Admit returns the kubelet's message for the first sysctl of pod the
// allowlist refuses, or "" when it allows them all.
func (w *SysctlAllowlist) Admit(pod *corev1.Pod) string {
	if pod.Spec.SecurityContext == nil {
		return ""
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.validate(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return fmt.Sprintf("forbidden sysctl: %v", err)
		}
	}
	return ""
}
