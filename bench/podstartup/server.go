package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/bench/internal/crirun"
)

// server is a control-plane-only `berth server` (no local node) on a
// loopback port, with a fresh data directory.
type server struct {
	proc   *crirun.Process
	url    string
	token  string
	client *kubernetes.Clientset
}

// startServer runs the server without node IPAM: both runtimes get the
// same kind of static CNI network of their own, so no podCIDR is handed out.
func startServer(ctx context.Context, berth, dir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(dir, "server")
	p, err := crirun.StartProcess("berth server", filepath.Join(dir, "server.log"), berth, "server",
		"--data-dir", dataDir, "--bind-address", "127.0.0.1", "--port", strconv.Itoa(port),
		"--disable-agent", "--cluster-cidr", "")
	if err != nil {
		return nil, err
	}
	s := &server{proc: p, url: "https://127.0.0.1:" + strconv.Itoa(port)}
	err = p.WaitFor(ctx, 3*time.Minute, func(ctx context.Context) error {
		token, err := os.ReadFile(filepath.Join(dataDir, "token"))
		if err != nil {
			return err
		}
		client, err := adminClient(filepath.Join(dataDir, "admin.kubeconfig"))
		if err != nil {
			return err
		}
		if _, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
			return err
		}
		s.token, s.client = strings.TrimSpace(string(token)), client
		return nil
	})
	if err != nil {
		p.Stop(30 * time.Second)
		return nil, err
	}
	return s, nil
}

// adminClient: the bench creates its pods in a burst, so client-go's
// default rate limit (5 requests/s) must not pace it.
func adminClient(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return kubernetes.NewForConfig(cfg)
}

func (s *server) stop() { s.proc.Stop(30 * time.Second) }

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("free port: not a TCP address")
	}
	return addr.Port, nil
}
