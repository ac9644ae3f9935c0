package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/agent/failover"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

// Two berth server replicas on a three-member etcd cluster (separate
// processes, mutual TLS, loopback), under a steady stream of creations
// through a client that fails over between the replicas: one etcd member is
// killed, then one replica. No acknowledged write is lost or applied twice,
// and a watch through the failover client converges on the survivor's state.
func TestHAReplicasOnAnEtcdCluster(t *testing.T) {
	bin := buildBerth(t)
	dir := t.TempDir()
	etcdCluster := etcdtest.StartCluster(t, 3, filepath.Join(dir, "etcd"))
	etcdFlags := []string{"--disable-agent",
		"--etcd-servers", strings.Join(etcdCluster.Endpoints, ","),
		"--etcd-cafile", etcdCluster.CAFile, "--etcd-certfile", etcdCluster.CertFile, "--etcd-keyfile", etcdCluster.KeyFile}

	dataA, dataB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	srvA := startServerArgs(t, bin, dataA, freePort(t), etcdFlags...)
	srvA.client(t)
	// Replicas share the cluster's CAs: the second starts from a copy of
	// the first's pki directory (docs/operations.md).
	copyDir(t, filepath.Join(dataA, "pki"), filepath.Join(dataB, "pki"))
	srvB := startServerArgs(t, bin, dataB, freePort(t), etcdFlags...)
	srvB.client(t)

	client := failoverClient(t, dataA, srvA.port, srvB.port)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	watched := watchConfigMaps(ctx, t, client)
	load := startCreating(ctx, client)

	load.waitFor(t, 30)
	etcdCluster.Kill(t, 0)
	t.Log("killed etcd member 0")
	load.waitFor(t, 60)
	if err := srvA.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srvA.exited
	t.Log("killed server replica a")
	load.waitFor(t, 90)
	cancel()
	acked := load.stop()

	survivor := srvB.client(t)
	list, err := survivor.CoreV1().ConfigMaps("load").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, cm := range list.Items {
		seen[cm.Data["seq"]]++
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
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return len(watched.ListKeys()) == len(list.Items), nil
	})
	if err != nil {
		t.Fatalf("watch holds %d configmaps, the survivor %d", len(watched.ListKeys()), len(list.Items))
	}
	for _, cm := range list.Items {
		if _, ok, _ := watched.GetByKey("load/" + cm.Name); !ok {
			t.Errorf("watch is missing %s", cm.Name)
		}
	}
}

// failoverClient is an admin client across both replicas.
func failoverClient(t *testing.T, dataDir string, ports ...int) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, p := range ports {
		servers = append(servers, "https://127.0.0.1:"+strconv.Itoa(p))
	}
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

func watchConfigMaps(ctx context.Context, t *testing.T, client kubernetes.Interface) cache.Store {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("load"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("configmap informer never synced")
	}
	return inf.GetStore()
}

// creator creates configmaps one after another, each with a unique seq,
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
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "load-"}, Data: map[string]string{"seq": seq}}
			if _, err := client.CoreV1().ConfigMaps("load").Create(ctx, cm, metav1.CreateOptions{}); err == nil {
				c.mu.Lock()
				c.acked = append(c.acked, seq)
				c.mu.Unlock()
			} else if ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond) // a replica or member is down; try the next one
			}
		}
	}()
	return c
}

// waitFor waits until n writes in all have been acknowledged.
func (c *creator) waitFor(t *testing.T, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.acked) >= n, nil
	})
	if err != nil {
		t.Fatalf("writes stalled before %d were acknowledged", n)
	}
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
