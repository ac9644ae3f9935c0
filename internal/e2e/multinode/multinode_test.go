package multinode

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/agent/podnet"
	testcluster "github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/registry"
	"github.com/berth/berth/internal/testkit/wait"
)

var nodeNames = []string{"node-a", "node-b", "node-c"}

// cluster is what the test started.
type cluster struct {
	t         *testing.T
	lan       *lan
	server    *testcluster.Server
	client    kubernetes.Interface
	nodes     map[string]*testcluster.Node
	serverDir string
	agentDir  map[string]string // node → the agent's data directory
}

// TestPodsReachEachOtherAcrossNodes: one server and three nodes joined with
// the server's join token, each node in its own network namespace on a
// shared bridge.
// The nodes get distinct podCIDRs, each agent routes to the other two, and
// a busybox client on node-b and one on node-c fetch the index of an httpd pod on
// node-a by its pod IP. Each joined node serves logs and exec with a serving
// certificate it obtained itself (kubelet-serving CSR): `berth kubectl logs`
// shows the clients' output and `berth kubectl exec` runs in the httpd pod,
// and the node servers admit only the API server.
func TestPodsReachEachOtherAcrossNodes(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.BusyboxStatic,
		hostcheck.Overlayfs, hostcheck.Gcc, hostcheck.IPRoute2, hostcheck.Nsenter)
	c := startCluster(t)
	ctx := context.Background()

	cidrs := c.waitNodesReady(ctx)
	for _, node := range nodeNames {
		c.waitRoutes(node, cidrs)
	}
	c.checkServingCertificates(ctx)
	c.checkNodeServerAdmitsOnlyTheAPIServer(ctx, "node-b")

	httpd := c.runPod(ctx, "httpd", "node-a", corev1.RestartPolicyAlways, images.Httpd, nil)
	c.waitPod(ctx, httpd, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && allReady(p)
	})
	server, _ := c.client.CoreV1().Pods("default").Get(ctx, httpd, metav1.GetOptions{})
	if !cidrs["node-a"].Contains(netip.MustParseAddr(server.Status.PodIP)) {
		t.Fatalf("httpd pod IP %s is not in node-a's podCIDR %s", server.Status.PodIP, cidrs["node-a"])
	}

	for _, node := range []string{"node-b", "node-c"} {
		// nc rather than wget: Debian's static busybox wget segfaults.
		name := c.runPod(ctx, "client-"+strings.TrimPrefix(node, "node-"), node, corev1.RestartPolicyNever, images.Busybox,
			[]string{"sh", "-c", `printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 20 "$0" 80`, server.Status.PodIP})
		c.waitPod(ctx, name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if got := c.kubectl("logs", name); !strings.Contains(got, strings.TrimSpace(images.HttpdIndex)) {
			t.Fatalf("%s on %s: kubectl logs %q lacks the httpd index %q\n%s", name, node, got, images.HttpdIndex, c.tails())
		}
		p, _ := c.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if ip := p.Status.PodIP; ip != "" && !cidrs[node].Contains(netip.MustParseAddr(ip)) {
			t.Errorf("%s's pod IP %s is not in %s's podCIDR %s", name, ip, node, cidrs[node])
		}
	}
	if got := c.kubectl("exec", httpd, "--", "cat", "/www/index.html"); got != images.HttpdIndex {
		t.Errorf("kubectl exec in %s on node-a: %q, want %q", httpd, got, images.HttpdIndex)
	}
}

// startCluster builds the network, the registry, the server and the nodes.
func startCluster(t *testing.T) *cluster {
	work, err := os.MkdirTemp("", "bmn-") // short: unix socket paths live under it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(work); err != nil {
			t.Errorf("remove %s: %v", work, err)
		}
	})
	l := newLAN(t, nodeNames...)
	t.Cleanup(func() {
		var nss []string
		for _, node := range nodeNames {
			nss = append(nss, l.nodeNS[node])
		}
		sweep(t, work, nss)
	})
	catalogue, err := images.Catalogue(context.Background(), images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := registry.Start(t)
	registry.Push(t, host, images.Set{
		"registry.k8s.io/pause:3.9": catalogue[images.Pause],
		images.Busybox:              catalogue[images.Busybox],
		images.Httpd:                catalogue[images.Httpd],
	})
	mirror := forward(t, l.bridgeNS, lanGateway+":0", host)

	c := &cluster{t: t, lan: l, nodes: map[string]*testcluster.Node{}, agentDir: map[string]string{}}
	c.server = testcluster.Start(t, berthBin, testcluster.Options{DataDir: filepath.Join(work, "server"),
		BindAddress: lanGateway, Port: 6443, NetNS: l.bridgeNS, Dial: dialer(l.bridgeNS), Args: []string{"--tls-san", lanGateway}})
	c.serverDir, c.client = c.server.DataDir, c.server.Admin
	token := c.server.JoinToken(t).String()

	for _, node := range nodeNames {
		dir := filepath.Join(work, node)
		c.nodes[node] = testcluster.StartNode(t, berthBin, testcluster.NodeOptions{Name: node, Dir: dir,
			Servers: c.server.URL, Token: token, NodeIP: l.nodeIP[node], NetNS: l.nodeNS[node],
			RuntimeArgs: append([]string{"--cni-conf-dir", filepath.Join(dir, "net.d"), "--wait-for-pod-cidr"}, testcluster.MirrorFlags(mirror)...),
			AgentArgs:   []string{"--port", "0"}})
		c.agentDir[node] = c.nodes[node].AgentDir
	}
	// Registered last, so it runs first: pods go while the nodes still
	// run, and the runtimes tear their sandboxes down themselves.
	t.Cleanup(c.deleteAllPods)
	return c
}

// procs are the processes the test started.
func (c *cluster) procs() []*testcluster.Process {
	out := []*testcluster.Process{c.server.Process}
	for _, node := range nodeNames {
		if n := c.nodes[node]; n != nil {
			out = append(out, n.Runtime, n.Agent)
		}
	}
	return out
}

func (c *cluster) poll(what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	c.t.Helper()
	err := wait.Poll(c.t.Context(), timeout, what, func(ctx context.Context) error {
		for _, p := range c.procs() {
			if !p.Running() {
				c.t.Fatalf("%s exited\n%s", p.Name, c.tails())
			}
		}
		if ok, err := cond(ctx); err != nil || !ok {
			return fmt.Errorf("not yet (%v)", err)
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("%v\n%s", err, c.tails())
	}
}

// waitNodesReady waits for every node to be Ready with a podCIDR, checks
// the podCIDRs are distinct, and returns them.
func (c *cluster) waitNodesReady(ctx context.Context) map[string]netip.Prefix {
	cidrs := map[string]netip.Prefix{}
	c.poll("three nodes Ready with podCIDRs", 3*time.Minute, func(ctx context.Context) (bool, error) {
		for _, name := range nodeNames {
			n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !testcluster.NodeReady(n) || n.Spec.PodCIDR == "" {
				return false, nil
			}
			cidrs[name] = netip.MustParsePrefix(n.Spec.PodCIDR)
		}
		return true, nil
	})
	seen := map[netip.Prefix]string{}
	cluster := netip.MustParsePrefix("10.88.0.0/16") // the server's default --cluster-cidr
	for node, p := range cidrs {
		if other, dup := seen[p]; dup {
			c.t.Fatalf("%s and %s share podCIDR %s", node, other, p)
		}
		seen[p] = node
		if p.Bits() != 24 || !cluster.Contains(p.Addr()) {
			c.t.Fatalf("%s's podCIDR %s is not a /24 of %s", node, p, cluster)
		}
	}
	return cidrs
}

// waitRoutes waits until node's namespace holds exactly berth's routes to
// the other nodes' podCIDRs via their addresses.
func (c *cluster) waitRoutes(node string, cidrs map[string]netip.Prefix) {
	var want []string
	for _, other := range nodeNames {
		if other != node {
			want = append(want, fmt.Sprintf("%s via %s", cidrs[other], c.lan.nodeIP[other]))
		}
	}
	slices.Sort(want)
	var got []string
	c.poll(node+" routes to the other nodes", 2*time.Minute, func(context.Context) (bool, error) {
		out := ipCmd(c.t, "-n", c.lan.nodeNS[node], "route", "show", "proto", fmt.Sprint(podnet.RouteProtocol))
		got = got[:0]
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) >= 3 {
				got = append(got, strings.Join(f[:3], " "))
			}
		}
		slices.Sort(got)
		return slices.Equal(got, want), nil
	})
}

func (c *cluster) runPod(ctx context.Context, name, node string, restart corev1.RestartPolicy, image string, command []string) string {
	grace := int64(2)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		NodeName: node, RestartPolicy: restart, TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "main", Image: image, Command: command}},
	}}
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	return name
}

func (c *cluster) waitPod(ctx context.Context, name string, cond func(*corev1.Pod) bool) {
	c.t.Helper()
	err := wait.Poll(ctx, 3*time.Minute, "pod "+name+" to reach the expected state", func(ctx context.Context) error {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodFailed {
			c.t.Fatalf("pod %s failed; status %+v\n%s", name, p.Status, c.tails())
		}
		if !cond(p) {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("%v\n%s", err, c.tails())
	}
}

func (c *cluster) deleteAllPods() {
	ctx := context.Background()
	pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Logf("clean-up: list pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		c.client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{})
	}
	err = wait.Poll(ctx, 2*time.Minute, "the test's pods to be gone", func(ctx context.Context) error {
		for _, p := range pods.Items {
			if _, err := c.client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("pod %s: %v", p.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		c.t.Logf("clean-up: pods not gone (the sweep kills what is left): %v", err)
	}
}

func (c *cluster) tails() string {
	var out []string
	for _, p := range c.procs() {
		out = append(out, p.Tail())
	}
	return strings.Join(out, "\n")
}

func allReady(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if !s.Ready {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0
}
