package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/pki"
)

// peerVersion is the kube-apiserver version hack/build-bench-peers.sh builds.
const peerVersion = "v1.37.2"

// startPeer runs upstream etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler (binaries from hack/build-bench-peers.sh in binDir) as
// a plain control plane would, with the flags they need and no more. etcd is reached over plain
// HTTP on loopback, which spares the peer the TLS cost a real deployment
// pays between the two; that favours the peer.
func startPeer(ctx context.Context, binDir, dir, logDir string) (*target, error) {
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return nil, fmt.Errorf("%w: build the peer first with hack/build-bench-peers.sh", err)
		}
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	t := &target{name: peerColumn}
	if err := startPeerEtcd(ctx, t, binDir, dir, logDir, etcdClient, etcdPeer); err != nil {
		t.stop()
		return nil, err
	}
	if err := startKubeAPIServer(ctx, t, binDir, dir, logDir, etcdClient, apiPort); err != nil {
		t.stop()
		return nil, err
	}
	return t, nil
}

func startPeerEtcd(ctx context.Context, t *target, binDir, dir, logDir string, clientPort, peerPort int) error {
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := startProcess("etcd", filepath.Join(logDir, "etcd.log"), filepath.Join(binDir, "etcd"),
		"--name", "bench", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "bench="+peerURL, "--log-level", "warn")
	if err != nil {
		return err
	}
	t.procs = append(t.procs, p)
	err = waitFor(ctx, time.Minute, t.procs, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("etcd /health: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	return nil
}

func startKubeAPIServer(ctx context.Context, t *target, binDir, dir, logDir string, etcdPort, port int) error {
	pkiDir := filepath.Join(dir, "pki")
	cluster, err := pki.LoadOrCreateCluster(pkiDir, pki.ServingNames{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		return fmt.Errorf("peer PKI: %w", err)
	}
	_, saKey, err := pki.NewKeyPEM()
	if err != nil {
		return err
	}
	saKeyFile := filepath.Join(pkiDir, "service-account.key")
	if err := os.WriteFile(saKeyFile, saKey, 0o600); err != nil {
		return err
	}
	p, err := startProcess("kube-apiserver", filepath.Join(logDir, "kube-apiserver.log"), filepath.Join(binDir, "kube-apiserver"),
		"--etcd-servers", "http://127.0.0.1:"+strconv.Itoa(etcdPort),
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", cluster.ServingCertFile, "--tls-private-key-file", cluster.ServingKeyFile,
		"--client-ca-file", filepath.Join(pkiDir, "client-ca.crt"),
		"--authorization-mode", "Node,RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saKeyFile, "--service-account-signing-key-file", saKeyFile,
		"--service-cluster-ip-range", "10.96.0.0/16",
		// The endpoint reconciler refuses a loopback advertise address;
		// with no in-cluster clients nothing needs the kubernetes Service's endpoints.
		"--endpoint-reconciler-type", "none")
	if err != nil {
		return err
	}
	t.procs = append(t.procs, p)
	kubeconfig, err := cluster.ClientKubeconfig("https://127.0.0.1:"+strconv.Itoa(port), pki.AdminIdentity)
	if err != nil {
		return err
	}
	if t.config, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig); err != nil {
		return err
	}
	if err := waitReady(ctx, t, 3*time.Minute); err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	return startPeerControllers(ctx, t, kubeconfig, binDir, pkiDir, logDir, saKeyFile)
}
