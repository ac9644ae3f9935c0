package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestEveryReplicaIsAKubernetesServiceEndpoint runs two server replicas on
// one external etcd, each advertising its own address: the kubernetes
// Service's Endpoints list both while both run (one lease each), and only
// the one left after the other stops.
func TestEveryReplicaIsAKubernetesServiceEndpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	etcd := etcdtest.StartCluster(t, 1, filepath.Join(dir, "etcd"))
	start := func(data, advertise string) *cluster.Server {
		return cluster.InProcess(t, data, func(ctx context.Context, dir string, port int) error {
			return server.Run(ctx, server.Config{DataDir: dir, SocketDir: filepath.Join(dir, "run"), BindAddress: "127.0.0.1", Port: port,
				DisableAgent: true, DisableScheduler: true, AdvertiseAddress: advertise,
				EtcdServers: etcd.Endpoints, EtcdCAFile: etcd.CAFile, EtcdCertFile: etcd.CertFile, EtcdKeyFile: etcd.KeyFile,
				Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		})
	}
	dataA, dataB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	a := start(dataA, "198.51.100.7")
	// Replicas share the cluster's CAs (docs/operations.md).
	if err := os.CopyFS(filepath.Join(dataB, "pki"), os.DirFS(filepath.Join(dataA, "pki"))); err != nil {
		t.Fatal(err)
	}
	b := start(dataB, "198.51.100.8")
	waitKubernetesEndpoints(t, a.Admin, "198.51.100.7", "198.51.100.8")
	if err := b.Stop(0); err != nil {
		t.Fatalf("replica b: %v", err)
	}
	waitKubernetesEndpoints(t, a.Admin, "198.51.100.7")
}

func waitKubernetesEndpoints(t *testing.T, cs kubernetes.Interface, want ...string) {
	t.Helper()
	wait.UntilCtx(t, time.Minute, fmt.Sprintf("the kubernetes Endpoints to list %v", want), func(ctx context.Context) error {
		eps, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var got []string
		for _, subset := range eps.Subsets {
			for _, a := range subset.Addresses {
				got = append(got, a.IP)
			}
		}
		if !sameSet(got, want) {
			return fmt.Errorf("addresses %v", got)
		}
		slice, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		got = nil
		for _, ep := range slice.Endpoints {
			got = append(got, ep.Addresses...)
		}
		if !sameSet(got, want) {
			return fmt.Errorf("slice addresses %v", got)
		}
		return nil
	})
}
