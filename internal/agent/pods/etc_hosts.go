package pods

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/atomicfile"
)

// The kubelet's managed /etc/hosts (pkg/kubelet's makeHostsMount and the
// content functions beside it, unexported there, so written here): the
// pod's own names on its IPs and its hostAliases, or for a host-network pod
// the node's file and the aliases. The runtime then mounts no hosts file of
// its own for the container.

// hostsFileName is the file in the pod's directory, as the kubelet names it.
const hostsFileName = "etc-hosts"

// hostsMount writes pod's hosts file and returns its mount for c; nil when
// c mounts /etc/hosts itself or the pod has no IP yet (as the kubelet).
func (m *Manager) hostsMount(pod *corev1.Pod, c *corev1.Container) (*runtimeapi.Mount, error) {
	if len(pod.Status.PodIPs) == 0 || slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool {
		return filepath.Clean(vm.MountPath) == "/etc/hosts"
	}) {
		return nil, nil
	}
	var content string
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile("/etc/hosts")
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("read the node's /etc/hosts: %w", err)
		}
		content = "# Kubernetes-managed hosts file (host network).\n" + string(node)
	} else {
		hostname, domain := podHostnameAndDomain(pod, m.cfg.ClusterDomain)
		content = managedHostsContent(pod.Status.PodIPs, hostname, domain)
	}
	content += hostAliasesContent(pod.Spec.HostAliases)
	path := filepath.Join(m.podDir(pod.UID), hostsFileName)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("pod directory for /etc/hosts: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(content), 0o644); err != nil {
		return nil, fmt.Errorf("write /etc/hosts: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: path}, nil
}

func managedHostsContent(ips []corev1.PodIP, hostname, domain string) string {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip.IP, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip.IP, hostname)
		}
	}
	return b.String()
}

func hostAliasesContent(aliases []corev1.HostAlias) string {
	if len(aliases) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.String()
}

// podHostnameAndDomain are the pod's hostname and domain, as the kubelet's
// GeneratePodHostNameAndDomain makes them: spec.hostnameOverride alone, with
// no domain, when set; else spec.hostname, or the pod's name, and with
// spec.subdomain the domain SUBDOMAIN.NAMESPACE.svc.CLUSTER_DOMAIN. A
// hostname is cut to 63 characters.
func podHostnameAndDomain(pod *corev1.Pod, clusterDomain string) (hostname, domain string) {
	if pod.Spec.HostnameOverride != nil {
		return truncateHostname(*pod.Spec.HostnameOverride), ""
	}
	hostname = pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	if pod.Spec.Subdomain != "" {
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return truncateHostname(hostname), domain
}

// truncateHostname cuts a hostname to 63 characters without a trailing
// '-' or '.', as the kubelet's truncatePodHostnameIfNeeded.
func truncateHostname(hostname string) string {
	if len(hostname) <= 63 {
		return hostname
	}
	return strings.TrimRight(hostname[:63], "-.")
}
