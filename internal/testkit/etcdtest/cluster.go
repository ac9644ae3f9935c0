package etcdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/ports"
)

// Cluster is a real etcd cluster of separate processes on loopback, with
// mutual TLS for clients and peers, for tests that kill members.
type Cluster struct {
	// Endpoints are the members' client URLs, in member order.
	Endpoints []string
	// CAFile, CertFile and KeyFile are what a client (berth server's
	// --etcd-cafile/--etcd-certfile/--etcd-keyfile) needs.
	CAFile, CertFile, KeyFile string
	members                   []*exec.Cmd
	exited                    []chan struct{}
}

// StartCluster builds etcd from berth's go.mod (./etcd) and starts n members
// in dir; they are killed when the test ends.
func StartCluster(t *testing.T, n int, dir string) *Cluster {
	t.Helper()
	bin := filepath.Join(dir, "etcd")
	build := exec.Command("go", "build", "-o", bin, "github.com/berth/berth/internal/testkit/etcdtest/etcd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("etcdtest: build etcd: %v\n%s", err, out)
	}
	c := &Cluster{}
	serverCert, serverKey := c.issueCerts(t, dir)
	clientPorts, peerPorts := ports.FreeN(t, n), ports.FreeN(t, n)
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=https://127.0.0.1:%d", i, peerPorts[i]))
		c.Endpoints = append(c.Endpoints, fmt.Sprintf("https://127.0.0.1:%d", clientPorts[i]))
	}
	for i := range n {
		peer := fmt.Sprintf("https://127.0.0.1:%d", peerPorts[i])
		args := []string{
			"--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, fmt.Sprintf("m%d", i)),
			"--listen-client-urls", c.Endpoints[i], "--advertise-client-urls", c.Endpoints[i],
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "berth-test",
			"--client-cert-auth", "--trusted-ca-file", c.CAFile, "--cert-file", serverCert, "--key-file", serverKey,
			"--peer-client-cert-auth", "--peer-trusted-ca-file", c.CAFile, "--peer-cert-file", serverCert, "--peer-key-file", serverKey,
			"--log-level", "warn",
		}
		c.start(t, bin, args, filepath.Join(dir, fmt.Sprintf("m%d.log", i)))
	}
	return c
}

func (c *Cluster) start(t *testing.T, bin string, args []string, logPath string) {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcdtest: start member: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()
	c.members = append(c.members, cmd)
	c.exited = append(c.exited, exited)
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
}

// Kill sends SIGKILL to member i and waits for it to die.
func (c *Cluster) Kill(t *testing.T, i int) {
	t.Helper()
	if err := c.members[i].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("etcdtest: kill member %d: %v", i, err)
	}
	<-c.exited[i]
}

// issueCerts makes a CA, one certificate the members use to serve clients
// and each other, and a client certificate.
func (c *Cluster) issueCerts(t *testing.T, dir string) (serverCert, serverKey string) {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(dir, "etcd-ca")
	if err != nil {
		t.Fatal(err)
	}
	c.CAFile = filepath.Join(dir, "etcd-ca.crt")
	write := func(name string, id pki.Identity) (string, string) {
		certPEM, keyPEM, err := ca.Issue(id)
		if err != nil {
			t.Fatal(err)
		}
		crt, key := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		if err := os.WriteFile(crt, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		return crt, key
	}
	serverCert, serverKey = write("etcd-member", pki.Identity{CommonName: "etcd-member", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true})
	c.CertFile, c.KeyFile = write("etcd-client", pki.Identity{CommonName: "berth-server", Client: true})
	return serverCert, serverKey
}
