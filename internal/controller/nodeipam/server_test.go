package nodeipam_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestServerAssignsPodCIDRsAcrossRestart runs the controller inside a real
// `berth server` (its own identity, over HTTPS): nodes get distinct
// podCIDRs, and after a restart on the same store a new node gets a CIDR
// none of the earlier nodes holds — the allocation is recovered, not reset.
func TestServerAssignsPodCIDRsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]string{}

	srv := startServer(t, dir)
	cs := srv.Admin
	for _, name := range []string{"n1", "n2"} {
		createNode(t, cs, name)
	}
	for _, name := range []string{"n1", "n2"} {
		seen[waitPodCIDR(t, cs, name)] = name
	}
	if err := srv.Stop(0); err != nil {
		t.Errorf("server: %v", err)
	}

	cs = startServer(t, dir).Admin
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

// startServer runs the server in the test's process on dir, with node
// IPAM on 10.44.0.0/16 and neither agent nor scheduler.
func startServer(t *testing.T, dir string) *cluster.Server {
	t.Helper()
	return cluster.InProcess(t, dir, func(ctx context.Context, dir string, port int) error {
		return server.Run(ctx, server.Config{DataDir: dir, SocketDir: filepath.Join(dir, "run"), BindAddress: "127.0.0.1", Port: port,
			DisableAgent: true, DisableScheduler: true, ClusterCIDR: "10.44.0.0/16", NodeCIDRMaskSize: 24,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	})
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
	wait.UntilCtx(t, time.Minute, "node "+name+" to get a podCIDR", func(ctx context.Context) error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cidr = n.Spec.PodCIDR
		if cidr != "" && len(n.Spec.PodCIDRs) == 1 && n.Spec.PodCIDRs[0] == cidr {
			return nil
		}
		return fmt.Errorf("podCIDR %q, podCIDRs %q", cidr, n.Spec.PodCIDRs)
	})
	return cidr
}
