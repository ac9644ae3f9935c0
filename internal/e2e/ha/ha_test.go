package ha

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/agent/failover"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/registry"
	"github.com/berth/berth/internal/testkit/wait"
)

// Two berth server replicas on a three-member etcd cluster (separate
// processes, mutual TLS, loopback), under a steady stream of pod creations
// through a client that fails over between the replicas, with an agent
// joined to both: one etcd member is killed, then one replica. No
// acknowledged write is lost or applied twice, a watch through the failover
// client converges on the survivor's state, and the agent carries on
// through the survivor (its Lease renewed, a new pod run); then kill -9 of
// the agent and of the runtime restarts no container.
func TestHAReplicasOnAnEtcdCluster(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.BusyboxStatic, hostcheck.Overlayfs, hostcheck.Gcc)
	dir := t.TempDir()
	etcdCluster := etcdtest.StartCluster(t, 3, filepath.Join(dir, "etcd"))

	dataA, dataB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	srvA := cluster.Start(t, berthBin, cluster.Options{DataDir: dataA, Etcd: etcdCluster})
	// Replicas share the cluster's CAs: the second starts from a copy of
	// the first's pki directory (docs/operations.md).
	copyDir(t, filepath.Join(dataA, "pki"), filepath.Join(dataB, "pki"))
	srvB := cluster.Start(t, berthBin, cluster.Options{DataDir: dataB, Etcd: etcdCluster})

	client := failoverClient(t, srvA, srvA.URL, srvB.URL)
	loadCtx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	servers := srvA.URL + "," + srvB.URL
	token := srvA.JoinToken(t).String()
	node := startJoinedNode(t, filepath.Join(dir, "node"), servers, token, "ha-node", "")
	// A second node on its own bridge and addresses (an operator-written
	// CNI config), so that "every agent converges" covers more than one.
	node2 := startJoinedNode(t, filepath.Join(dir, "node2"), servers, token, "ha-node-2", "berthha2")
	waitPodRunning(t, client, runPod(t, client, "before-failover", "ha-node"))
	waitPodRunning(t, client, runPod(t, client, "before-failover-2", "ha-node-2"))
	assertHoldsNoEtcdAccess(t, node.Agent.Pid(), node.AgentDir, etcdCluster)
	assertHoldsNoEtcdAccess(t, node2.Agent.Pid(), node2.AgentDir, etcdCluster)
	if _, err := client.CoreV1().Namespaces().Create(loadCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The watch outlives the load: stopping the load cancels a create in
	// flight that the store may still apply, and the watch must see it.
	watched := watchLoadPods(t.Context(), t, client)
	load := startCreating(loadCtx, client)

	load.waitFor(t, 30)
	etcdCluster.Kill(t, 0)
	t.Log("killed etcd member 0")
	load.waitFor(t, 60)
	_ = srvA.Stop(syscall.SIGKILL)
	t.Log("killed server replica a")
	load.waitFor(t, 90)
	stopLoad()
	acked := load.stop()

	// Every agent reached the survivor: it renews its Lease and runs a new pod.
	for name, pod := range map[string]string{"ha-node": "after-failover", "ha-node-2": "after-failover-2"} {
		renewed := leaseRenewTime(t, client, name)
		waitPodRunning(t, client, runPod(t, client, pod, name))
		wait.Until(t, time.Minute, "agent "+name+"'s Lease to be renewed through the surviving replica", func() bool {
			return leaseRenewTime(t, client, name).After(renewed)
		})
	}
	// The survivor's scheduler took over: an unbound pod gets a node.
	waitPodRunning(t, client, runPod(t, client, "scheduled-after-failover", ""))

	// kill -9 of the agent, then of the runtime, under the surviving
	// replica: the pods keep running, nothing is restarted, and the agent
	// carries on (its Lease renewed again).
	pods := []string{"before-failover", "after-failover", "before-failover-2", "after-failover-2", "scheduled-after-failover"}
	before := containerIDs(t, client, pods...)
	_ = node.Agent.Stop(syscall.SIGKILL)
	node.StartAgent(t)
	waitLeaseRenewed(t, client, "ha-node")
	_ = node.Runtime.Stop(syscall.SIGKILL)
	node.StartRuntime(t)
	waitLeaseRenewed(t, client, "ha-node")
	if after := containerIDs(t, client, pods...); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("containers changed across agent and runtime restarts: %v, then %v", before, after)
	}

	survivor := srvB.Admin
	list, err := survivor.CoreV1().Pods("load").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, cm := range list.Items {
		seen[cm.Annotations["seq"]]++
	}
	for seq, n := range seen {
		if n > 1 {
			t.Errorf("write %s applied %d times", seq, n)
		}
	}
	for _, seq := range acked {
		if seen[seq] != 1 {
			t.Errorf("acknowledged write %s: found %d times", seq, seen[seq])
		}
	}
	t.Logf("%d writes acknowledged, %d stored", len(acked), len(list.Items))

	// The watch resumed through the failover (bookmark or 410 and re-list)
	// and holds exactly what the survivor holds.
	wait.UntilNil(t, 2*time.Minute, "the watch to hold what the survivor holds", func() error {
		if n := len(watched.ListKeys()); n != len(list.Items) {
			return fmt.Errorf("watch holds %d pods, the survivor %d", n, len(list.Items))
		}
		return nil
	})
	for _, cm := range list.Items {
		if _, ok, _ := watched.GetByKey("load/" + cm.Name); !ok {
			t.Errorf("watch is missing %s", cm.Name)
		}
	}
}

// startJoinedNode starts a `berth runtime` and a `berth agent` that joins
// with token and is given every replica's URL, its images from a loopback
// registry; bridge, unless empty, gives it a CNI network of its own.
func startJoinedNode(t *testing.T, dir, servers, token, name, bridge string) *cluster.Node {
	t.Helper()
	host := registry.StartWithPodImages(t)
	opts := cluster.NodeOptions{Name: name, Dir: dir, Servers: servers, Token: token, NodeIP: "127.0.0.1",
		RuntimeArgs: cluster.MirrorFlags(host),
		// Several nodes share this host: each node server on a port of its
		// own; the nodes share 127.0.0.1, so no host-gw route is made between them.
		AgentArgs: []string{"--address", "127.0.0.1", "--port", "0"}}
	if bridge != "" {
		opts.RuntimeArgs = append(opts.RuntimeArgs, "--cni-conf-dir", writeBridgeConf(t, dir, bridge))
	}
	return cluster.StartNode(t, berthBin, opts)
}

// writeBridgeConf writes a CNI network of its own for one node (bridge name
// and host-local range 10.89.0.0/24, apart from the default 10.88.0.0/16) and
// returns its directory; the runtime leaves a config it did not write alone.
func writeBridgeConf(t *testing.T, dir, bridge string) string {
	t.Helper()
	confDir := filepath.Join(dir, "net.d")
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,`+
		`"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.89.0.0/24"}]]}}]}`, bridge, bridge, filepath.Join(dir, "ipam"))
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-"+bridge+".conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", bridge).Run() })
	return confDir
}

// assertHoldsNoEtcdAccess checks that the agent's command line and
// environment name no etcd endpoint, and that nothing in its data directory
// holds etcd's CA or client credentials.
func assertHoldsNoEtcdAccess(t *testing.T, agentPid int, dataDir string, c *etcdtest.Cluster) {
	t.Helper()
	for _, f := range []string{"cmdline", "environ"} {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(agentPid), f))
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range c.Endpoints {
			if strings.Contains(string(data), strings.TrimPrefix(ep, "https://")) {
				t.Errorf("agent %s names etcd endpoint %s", f, ep)
			}
		}
	}
	var secrets [][]byte
	for _, f := range []string{c.CAFile, c.CertFile, c.KeyFile} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, bytes.TrimSpace(data))
	}
	err := filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil // sockets and the like
		}
		for _, s := range secrets {
			if bytes.Contains(data, s) {
				t.Errorf("agent file %s holds etcd credentials", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runPod creates a sleeping pod, bound to node at creation unless node is
// empty (then the scheduler places it).
func runPod(t *testing.T, client kubernetes.Interface, name, node string) string {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		NodeName:   node,
		Containers: []corev1.Container{{Name: "main", Image: images.Busybox, Command: []string{"sleep", "3600"}}},
	}}
	// A replica may be going away under us: retry until one takes it.
	wait.UntilCtx(t, time.Minute, "pod "+name+" to be created", func(ctx context.Context) error {
		_, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	return name
}

func waitPodRunning(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	wait.UntilCtx(t, 3*time.Minute, "pod "+name+" to be Running", func(ctx context.Context) error {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("last: %+v", p)
		}
		return nil
	})
}

// containerIDs returns each named pod's container ID and restart count,
// once it is Running.
func containerIDs(t *testing.T, client kubernetes.Interface, names ...string) []string {
	t.Helper()
	var out []string
	for _, name := range names {
		waitPodRunning(t, client, name)
		p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			t.Fatalf("pod %s: %v %+v", name, err, p.Status.ContainerStatuses)
		}
		cs := p.Status.ContainerStatuses[0]
		out = append(out, fmt.Sprintf("%s/%s#%d", name, cs.ContainerID, cs.RestartCount))
	}
	return out
}

// waitLeaseRenewed waits until the node's Lease is renewed after now.
func waitLeaseRenewed(t *testing.T, client kubernetes.Interface, node string) {
	t.Helper()
	since := time.Now() // same clock as the agent's; renewTime keeps microseconds
	wait.Until(t, 2*time.Minute, "node "+node+"'s Lease to be renewed", func() bool {
		return leaseRenewTime(t, client, node).After(since)
	})
}

func leaseRenewTime(t *testing.T, client kubernetes.Interface, node string) time.Time {
	t.Helper()
	lease, err := client.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), node, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil {
		return time.Time{}
	}
	return lease.Spec.RenewTime.Time
}

// failoverClient is an admin client of srv's across the servers' URLs.
func failoverClient(t *testing.T, srv *cluster.Server, servers ...string) *kubernetes.Clientset {
	t.Helper()
	cfg := srv.RESTConfig(t)
	if err := failover.Configure(cfg, servers); err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 20 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func watchLoadPods(ctx context.Context, t *testing.T, client kubernetes.Interface) cache.Store {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("load"))
	inf := factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("pod informer never synced")
	}
	return inf.GetStore()
}

// creator creates pods one after another, each with a unique seq (they
// select a node label no node has, so they stay Pending and cost the node nothing),
// and records the ones the API acknowledged. Failed creates are not
// retried: a create whose answer was lost may or may not have happened,
// which the no-duplicate check covers.
type creator struct {
	mu    sync.Mutex
	acked []string
	done  chan struct{}
}

func startCreating(ctx context.Context, client kubernetes.Interface) *creator {
	c := &creator{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for i := 0; ctx.Err() == nil; i++ {
			seq := fmt.Sprintf("%06d", i)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "load-", Annotations: map[string]string{"seq": seq}},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"berth.test/pool": "none"},
					Containers: []corev1.Container{{Name: "c", Image: images.Busybox}}},
			}
			if _, err := client.CoreV1().Pods("load").Create(ctx, pod, metav1.CreateOptions{}); err == nil {
				c.mu.Lock()
				c.acked = append(c.acked, seq)
				c.mu.Unlock()
			} else if ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond) //wait:intended a replica or member is down; the load goes on after a pause
			}
		}
	}()
	return c
}

// waitFor waits until n writes in all have been acknowledged.
func (c *creator) waitFor(t *testing.T, n int) {
	t.Helper()
	wait.Until(t, 3*time.Minute, fmt.Sprintf("%d writes to be acknowledged", n), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.acked) >= n
	})
}

func (c *creator) stop() []string {
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.acked...)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatalf("copy %s to %s: %v", from, to, err)
	}
}
