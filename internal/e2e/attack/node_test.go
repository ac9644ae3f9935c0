package attack

import (
	"context"
	"crypto/tls"
	"errors"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/berth/berth/internal/agent/join"
	"github.com/berth/berth/internal/testkit/nodewait"
)

// joinedNode is a node the attacker controls: it joined with the server's
// bootstrap token as `berth agent` does (internal/agent/join), got a
// serving certificate through its own kubelet-serving CSR, and registered
// itself with an address on loopback where the test's node server answers
// every request with a redirect to a marker server on loopback.
type joinedNode struct {
	c      *cluster
	name   string
	client kubernetes.Interface // authenticated by the node's own client certificate

	nodeServerHits atomic.Int64 // requests the node server answered
	marker         string       // what the marker server serves
	markerHits     atomic.Int64 // requests the marker server answered
}

// joinNode joins name with the token in the server's data directory,
// registers it at ip (a loopback address no other node reports) and starts
// its node server. Everything stops at clean-up.
func (c *cluster) joinNode(name, ip string) *joinedNode {
	c.t.Helper()
	n := &joinedNode{c: c, name: name, marker: "berth-attack-redirect-secret-" + randomHex(c.t)}
	dir := c.t.TempDir()
	token := c.JoinToken(c.t)
	joinCtx, cancel := context.WithTimeout(c.t.Context(), 2*time.Minute)
	defer cancel()
	kubeconfig, err := join.Ensure(joinCtx, join.Config{Server: c.url, Token: &token, NodeName: name, Dir: dir, Logger: testLogger(c.t)})
	if err != nil {
		c.t.Fatalf("%s joins with the server's token: %v", name, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.Timeout = 30 * time.Second
	n.client = kubernetes.NewForConfigOrDie(cfg)

	markerURL := n.startMarkerServer()
	listener, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		c.t.Fatal(err)
	}
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	n.register(addrs, int32(listener.Addr().(*net.TCPAddr).Port))
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	c.t.Cleanup(func() { stop(); wg.Wait() })
	serving := n.servingCertificate(ctx, dir, addrs)
	n.serveRedirects(&wg, listener, serving, markerURL)
	wg.Go(func() { n.heartbeat(ctx) })
	return n
}

// register creates the node's Node and reports it Ready at addrs with its
// node server on port, as an agent does.
func (n *joinedNode) register(addrs []corev1.NodeAddress, port int32) {
	n.c.t.Helper()
	ctx := n.c.t.Context()
	_, err := n.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: n.name, Labels: map[string]string{corev1.LabelHostname: n.name, corev1.LabelOSStable: "linux"},
	}}, metav1.CreateOptions{})
	if err != nil {
		n.c.t.Fatalf("%s registers itself: %v", n.name, err)
	}
	// Deleted before the server stops, so the local agent takes back its
	// route to this node's podCIDR.
	n.c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := n.c.admin.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
			n.c.t.Logf("clean-up: delete node %s: %v", n.name, err)
		}
	})
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	// The node IPAM controller writes the new Node's podCIDR meanwhile.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		node.Status.Addresses = addrs
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = port
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = n.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		n.c.t.Fatalf("%s reports its status: %v", n.name, err)
	}
	// Pods are bound to it only once the node lifecycle controller has
	// lifted the not-ready taint TaintNodesByCondition gave the new Node.
	if err := nodewait.Untainted(n.c.t.Context(), n.c.admin, time.Minute, n.name); err != nil {
		n.c.t.Fatal(err)
	}
}

// heartbeat keeps the node Ready until ctx ends, so the node lifecycle
// controller never evicts its pods during the test.
func (n *joinedNode) heartbeat(ctx context.Context) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C: //wait:intended a heartbeat every 10 s, as a kubelet sends
		}
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				node.Status.Conditions[i].LastHeartbeatTime = metav1.Now()
			}
		}
		_, _ = n.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	}
}

// servingCertificate obtains the node's serving certificate for addrs the
// way a joined agent does (kubelet-serving CSR, approved and signed by the
// server) and returns its source, which rotates until ctx ends.
func (n *joinedNode) servingCertificate(ctx context.Context, dir string, addrs []corev1.NodeAddress) *join.Serving {
	n.c.t.Helper()
	serving, err := join.NewServing(ctx, dir, n.name, testLogger(n.c.t))
	if err != nil {
		n.c.t.Fatal(err)
	}
	serving.SetAddresses(addrs)
	serving.Start()
	n.c.poll(n.c.t, n.name+"'s serving certificate (kubelet-serving CSR)", 2*time.Minute, func(context.Context) (bool, error) {
		_, err := serving.GetCertificate(nil)
		return err == nil, nil
	})
	return serving
}

// serveRedirects runs the node server: TLS with the node's serving
// certificate, every request answered 302 to markerURL.
func (n *joinedNode) serveRedirects(wg *sync.WaitGroup, listener net.Listener, serving *join.Serving, markerURL string) {
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.nodeServerHits.Add(1)
			http.Redirect(w, r, markerURL, http.StatusFound)
		}),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: serving.GetCertificate},
		ReadHeaderTimeout: 10 * time.Second,
	}
	wg.Go(func() {
		if err := srv.ServeTLS(listener, "", ""); !errors.Is(err, http.ErrServerClosed) {
			n.c.t.Logf("%s's node server: %v", n.name, err)
		}
	})
	n.c.t.Cleanup(func() { srv.Close() })
}

// startMarkerServer serves the marker over plain HTTP on 127.0.0.1 and
// counts who asked; it returns its URL.
func (n *joinedNode) startMarkerServer() string {
	n.c.t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.c.t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.markerHits.Add(1)
			_, _ = w.Write([]byte(n.marker + "\n"))
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(listener) }()
	n.c.t.Cleanup(func() { srv.Close(); <-done })
	return "http://" + listener.Addr().String() + "/secret"
}

// boundPod creates (as admin) a pod in the attacker's namespace bound to
// the node and waits until the node may read it (the Node authorizer's
// graph has it).
func (n *joinedNode) boundPod(name string) *corev1.Pod {
	n.c.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: attackNS, Labels: map[string]string{"app": name, "tier": "backend"}},
		Spec:       corev1.PodSpec{NodeName: n.name, Containers: []corev1.Container{busybox("main", "sleep", "3600")}},
	}
	created, err := n.c.admin.CoreV1().Pods(attackNS).Create(n.c.t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		n.c.t.Fatalf("create pod %s bound to %s: %v", name, n.name, err)
	}
	n.c.t.Cleanup(func() { n.c.deletePodNow(attackNS, name) })
	n.c.poll(n.c.t, n.name+" to be allowed to read its pod "+name, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := n.client.CoreV1().Pods(attackNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	return created
}

// nodeRelabelsThroughStatus: the node updates the status of a pod bound
// to it and changes the pod's labels on the way, which would move the pod
// into or out of Services, NetworkPolicies and controllers' selectors.
// Upstream's NodeRestriction refuses label changes through pods/status.
func nodeRelabelsThroughStatus(t *testing.T, c *cluster, n *joinedNode, victim *corev1.Pod) {
	ctx := t.Context()
	before, err := c.admin.CoreV1().Pods(attackNS).Get(ctx, victim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := n.client.CoreV1().Pods(attackNS).Get(ctx, victim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s reads its own pod %s: %v", n.name, victim.Name, err)
	}
	pod.Labels = map[string]string{"app": "hijacked", "tier": "frontend", "attacker": n.name}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	_, err = n.client.CoreV1().Pods(attackNS).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	t.Logf("update pods/status of %s with new labels as %s: %v", victim.Name, n.name, err)
	want := "node \"" + n.name + "\" cannot update labels through pod status"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("node %s updates pod %s's status with changed labels: err = %v, want 403 Forbidden containing %q", n.name, victim.Name, err, want)
	}
	after, err := c.admin.CoreV1().Pods(attackNS).Get(ctx, victim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(after.Labels, before.Labels) {
		t.Errorf("pod %s's labels changed through pods/status: %v -> %v", victim.Name, before.Labels, after.Labels)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("pod %s's resourceVersion moved %s -> %s on a refused status update", victim.Name, before.ResourceVersion, after.ResourceVersion)
	}
}

// nodeRedirectsLogs: the node's server answers the API server's pods/log
// request with a redirect to another server. Following it would make the
// API server (or, relayed, the user's client) fetch whatever the node
// points at with the authority of the one asking; the request must fail
// and the marker behind the redirect must never be read.
func nodeRedirectsLogs(t *testing.T, c *cluster, n *joinedNode, victim *corev1.Pod) {
	hitsBefore := n.nodeServerHits.Load()
	body, err := c.admin.CoreV1().Pods(attackNS).GetLogs(victim.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	t.Logf("GET pods/log of %s on %s as admin: err = %v, body %q", victim.Name, n.name, err, body)
	if got := n.nodeServerHits.Load(); got == hitsBefore {
		t.Fatalf("the API server never called %s's node server for pods/log (err = %v): the redirect was not exercised", n.name, err)
	}
	if strings.Contains(string(body), n.marker) || (err != nil && strings.Contains(err.Error(), n.marker)) {
		t.Errorf("GET pods/log of %s followed %s's redirect: the response holds the marker server's secret (err = %v, body %q)", victim.Name, n.name, err, body)
	}
	if err == nil {
		t.Errorf("GET pods/log of %s succeeded with %q, want an error: the node answered with a redirect", victim.Name, body)
	}
	out, ok := c.kubectl("logs", "-n", attackNS, victim.Name)
	t.Logf("berth kubectl logs %s (ok=%v): %s", victim.Name, ok, strings.TrimSpace(out))
	if strings.Contains(out, n.marker) {
		t.Errorf("berth kubectl logs %s followed %s's redirect and printed the marker server's secret: %q", victim.Name, n.name, out)
	}
	if ok {
		t.Errorf("berth kubectl logs %s succeeded (%q), want it to fail: the node answered with a redirect", victim.Name, out)
	}
	if hits := n.markerHits.Load(); hits != 0 {
		t.Errorf("the marker server behind %s's redirect was asked %d times, want never", n.name, hits)
	}
}
