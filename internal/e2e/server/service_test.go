package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/kubeproxytable"
	"github.com/berth/berth/internal/testkit/vethaddr"
	"github.com/berth/berth/internal/testkit/wait"
)

// The node's address in TestServiceDataPath: on a veth the test creates to
// a network namespace of its own, so NodePorts answer on an address of the
// test's and never on the machine's.
const (
	serviceTestLink   = "berthsvc0"
	serviceTestNetNS  = "berthsvc"
	serviceTestNodeIP = "10.250.250.1"
	serviceTestPeerIP = "10.250.250.2"
	// webPage is what the web pod serves (with a newline).
	webPage = "served by pod web"
)

// TestServiceDataPath runs a single-node cluster whose agent runs
// kube-proxy's nftables proxier: a second pod reaches an HTTP pod through
// its Service's ClusterIP and port, and the host, and a client in another
// network namespace, reach it through a NodePort on the node's IP.
func TestServiceDataPath(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.BusyboxStatic,
		hostcheck.Overlayfs, hostcheck.Gcc, hostcheck.Nft, hostcheck.IPRoute2)
	kubeproxytable.Own(t)
	addNodeIP(t)
	srv := cluster.Start(t, berthBin, cluster.Options{LocalNode: "svc-node",
		Args: []string{"--proxy-mode", "nftables", "--node-ip", serviceTestNodeIP}})
	cs := srv.Admin
	ns := "default"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("table ip kube-proxy:\n%s", kubeproxytable.List(context.Background()))
		}
	})

	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptrTo[int64](1), Containers: []corev1.Container{{
			// The cluster's registry holds busybox: its httpd serves the page.
			Name: "httpd", Image: images.Busybox, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
			Command: []string{"sh", "-c", "mkdir -p /www && echo '" + webPage + "' > /www/index.html && exec httpd -f -p 80 -h /www"},
		}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clusterIP := createWebService(t, cs, ns, "web", corev1.ServiceTypeClusterIP).Spec.ClusterIP
	nodePort := createWebService(t, cs, ns, "web-nodeport", corev1.ServiceTypeNodePort).Spec.Ports[0].NodePort

	// The host fetches it through the NodePort on the node's IP.
	hostURL := "http://" + net.JoinHostPort(serviceTestNodeIP, strconv.Itoa(int(nodePort))) + "/"
	httpClient := &http.Client{Timeout: 3 * time.Second}
	wait.UntilCtx(t, 2*time.Minute, "the host to fetch "+hostURL+" (the web pod through a NodePort)", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, hostURL, nil)
		if err != nil {
			return err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if string(body) != webPage+"\n" {
			return fmt.Errorf("status %s, body %q", resp.Status, body)
		}
		return nil
	})

	// A second pod fetches the page through the ClusterIP until it gets it.
	// busybox's nc, not its wget: the static wget crashes.
	url := net.JoinHostPort(clusterIP, "8080")
	fetch := "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 " + clusterIP + " 8080"
	client := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptrTo[int64](1), Containers: []corev1.Container{{
			Name: "wget", Image: images.Busybox,
			Command: []string{"sh", "-c", "until " + fetch + " | grep -q '^" + webPage + "$'; do sleep 1; done; echo REACHED; exec sleep 3600"},
		}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var clientLog string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client's log: %q", clientLog)
		}
	})
	wait.UntilCtx(t, 3*time.Minute, "pod client to fetch "+url+" (the web pod through its ClusterIP)", func(ctx context.Context) error {
		logs, err := cs.CoreV1().Pods(ns).GetLogs("client", &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("client's log: %w", err)
		}
		if !strings.Contains(string(logs), "REACHED") {
			clientLog = string(logs)
			return fmt.Errorf("client's log so far: %q", logs)
		}
		return nil
	})

	// A client outside the node (in the test's namespace) reaches it too.
	wait.UntilCtx(t, 2*time.Minute, "a client in netns "+serviceTestNetNS+" to fetch "+hostURL, func(ctx context.Context) error {
		// busybox's nc: its static wget crashes outside a container's root.
		get := exec.CommandContext(ctx, "ip", "netns", "exec", serviceTestNetNS, hostcheck.BusyboxPath, "nc", "-w", "3", serviceTestNodeIP, strconv.Itoa(int(nodePort)))
		get.Stdin = strings.NewReader("GET / HTTP/1.0\r\n\r\n")
		out, err := get.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "HTTP/1.1 200 OK") || !strings.HasSuffix(string(out), "\r\n\r\n"+webPage+"\n") {
			return fmt.Errorf("nc: %v: %q", err, out)
		}
		return nil
	})
}

// createWebService creates a Service of type typ selecting app=web, port
// 8080 to the pod's port 80, and returns it as created.
func createWebService(t *testing.T, cs kubernetes.Interface, ns, name string, typ corev1.ServiceType) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Type: typ, Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}},
	}}
	created, err := cs.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
	if created.Spec.ClusterIP == "" || created.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatalf("service %s got no cluster IP: %+v", name, created.Spec)
	}
	if typ == corev1.ServiceTypeNodePort && created.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("service %s got no node port: %+v", name, created.Spec)
	}
	return created
}

// addNodeIP puts the test's node IP on the host's end of a veth pair whose
// other end is in a network namespace of the test's own (serviceTestNetNS,
// serviceTestPeerIP), until the test ends.
func addNodeIP(t *testing.T) {
	t.Helper()
	vethaddr.Add(t, vethaddr.Pair{Link: serviceTestLink, NetNS: serviceTestNetNS, HostIP: serviceTestNodeIP, PeerIP: serviceTestPeerIP})
}

func ptrTo[T any](v T) *T { return &v }
