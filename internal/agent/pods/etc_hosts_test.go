package pods

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// The hosts file is the kubelet's, line for line: localhost entries, the
// pod's FQDN on each of its IPs when it has a subdomain, its aliases last;
// a container with its own /etc/hosts, or a pod without an IP yet, gets none.
func TestManagedEtcHostsAsTheKubelet(t *testing.T) {
	m := New(Config{NodeName: testNode, DataDir: t.TempDir()}, fake.NewClientset(), nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "apps", UID: "u1"},
		Spec: corev1.PodSpec{Subdomain: "web", HostAliases: []corev1.HostAlias{
			{IP: "192.0.2.10", Hostnames: []string{"foo.local", "bar.local"}},
		}},
		Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.88.0.9"}, {IP: "fd00::9"}}},
	}
	c := &corev1.Container{Name: "c"}
	mount, err := m.hostsMount(pod, c)
	if err != nil || mount == nil || mount.ContainerPath != "/etc/hosts" || mount.Readonly {
		t.Fatalf("hostsMount = %+v, %v", mount, err)
	}
	got, err := os.ReadFile(mount.HostPath)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		"10.88.0.9\tweb-0.web.apps.svc.cluster.local\tweb-0\n" +
		"fd00::9\tweb-0.web.apps.svc.cluster.local\tweb-0\n" +
		"\n# Entries added by HostAliases.\n192.0.2.10\tfoo.local\tbar.local\n"
	if string(got) != want {
		t.Errorf("hosts file:\n%s\nwant:\n%s", got, want)
	}

	pod.Spec.Subdomain, pod.Spec.Hostname = "", "custom"
	if mount, err = m.hostsMount(pod, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(mount.HostPath); !strings.Contains(string(got), "10.88.0.9\tcustom\n") {
		t.Errorf("spec.hostname without a subdomain:\n%s", got)
	}

	own := &corev1.Container{Name: "own", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/etc/hosts/"}}}
	if mount, err := m.hostsMount(pod, own); mount != nil || err != nil {
		t.Errorf("container mounting its own /etc/hosts got %+v, %v", mount, err)
	}
	pod.Status.PodIPs = nil
	if mount, err := m.hostsMount(pod, c); mount != nil || err != nil {
		t.Errorf("pod without an IP got %+v, %v", mount, err)
	}
}

func TestPodHostnameIsCutTo63Characters(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 62) + "-bbb", Namespace: "n"}}
	if h, d := podHostnameAndDomain(pod, "cluster.local"); h != strings.Repeat("a", 62) || d != "" {
		t.Errorf("hostname %q domain %q", h, d)
	}
}

// spec.hostnameOverride is the whole hostname, with no domain, even beside
// spec.hostname and spec.subdomain, as the kubelet makes it.
func TestPodHostnameOverride(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n"}, Spec: corev1.PodSpec{
		Hostname: "h", Subdomain: "s", HostnameOverride: ptr.To("override.example.host"),
	}}
	if h, d := podHostnameAndDomain(pod, "cluster.local"); h != "override.example.host" || d != "" {
		t.Errorf("hostname %q domain %q, want override.example.host and none", h, d)
	}
	pod.Spec.HostnameOverride = nil
	if h, d := podHostnameAndDomain(pod, "cluster.local"); h != "h" || d != "s.n.svc.cluster.local" {
		t.Errorf("without the override: hostname %q domain %q", h, d)
	}
}
