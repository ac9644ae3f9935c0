package nodeipam_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/ports"
)

// TestServerAssignsPodCIDRsAcrossRestart runs the controller inside a real
// `berth server` (its own identity, over HTTPS): nodes get distinct
// podCIDRs, and after a restart on the same store a new node gets a CIDR
// none of the earlier nodes holds — the allocation is recovered, not reset.
func TestServerAssignsPodCIDRsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]string{}

	cs, stop := startServer(t, dir)
	for _, name := range []string{"n1", "n2"} {
		createNode(t, cs, name)
	}
	for _, name := range []string{"n1", "n2"} {
		seen[waitPodCIDR(t, cs, name)] = name
	}
	stop()

	cs, stop = startServer(t, dir)
	defer stop()
	createNode(t, cs, "n3")
	got := waitPodCIDR(t, cs, "n3")
	if other, dup := seen[got]; dup {
		t.Fatalf("n3 got %s, already held by %s", got, other)
	}
	seen[got] = "n3"
	if len(seen) != 3 {
		t.Fatalf("podCIDRs not distinct: %v", seen)
	}
	for cidr := range seen {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil || n.String() != cidr || n.IP.To4() == nil || n.IP[0] != 10 || n.IP[1] != 44 {
			t.Errorf("podCIDR %s is not a /24 of --cluster-cidr 10.44.0.0/16", cidr)
		}
	}
}

func startServer(t *testing.T, dir string) (kubernetes.Interface, func()) {
	t.Helper()
	port := ports.Free(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: dir, SocketDir: filepath.Join(dir, "run"), BindAddress: "127.0.0.1", Port: port,
			DisableAgent: true, DisableScheduler: true, ClusterCIDR: "10.44.0.0/16", NodeCIDRMaskSize: 24,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	}()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	}
	var cs kubernetes.Interface
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("server exited: %v", err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
		if err != nil {
			return false, nil
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return false, nil
		}
		if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		cs = c
		return true, nil
	})
	if err != nil {
		stop()
		t.Fatalf("server never served: %v", err)
	}
	return cs, stop
}

func createNode(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitPodCIDR(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	var cidr string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cidr = n.Spec.PodCIDR
		return cidr != "" && len(n.Spec.PodCIDRs) == 1 && n.Spec.PodCIDRs[0] == cidr, nil
	})
	if err != nil {
		t.Fatalf("node %s never got a podCIDR: %v", name, err)
	}
	return cidr
}
