package differential

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/wait"
)

// kubeVersion is the kube-apiserver the answers are compared with.
const kubeVersion = "v1.37.2"

// adminToken is kube-apiserver's static admin token (system:masters),
// from its --token-auth-file.
const adminToken = "differential-admin-token"

// repoRoot is three levels above this package's directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// kubeAPIServerBinary returns _output/bench/kube-apiserver, built by
// hack/build-bench-peers.sh if it is missing or another version.
func kubeAPIServerBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(repoRoot(), "_output", "bench", "kube-apiserver")
	if out, err := exec.Command(bin, "--version").Output(); err == nil && strings.Contains(string(out), kubeVersion) {
		return bin
	}
	start := time.Now()
	cmd := exec.Command(filepath.Join(repoRoot(), "hack", "build-bench-peers.sh"), "kube-apiserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/build-bench-peers.sh kube-apiserver: %v\n%s", err, out)
	}
	t.Logf("built %s in %s", bin, time.Since(start).Round(time.Second))
	return bin
}

// startKubeAPIServer runs kube-apiserver on 127.0.0.1 over etcd, stopped
// when the test ends, and returns a client configuration for its admin.
// Admission plugins are upstream's defaults: the differences from berth's
// set show in the answers and are listed as such.
func startKubeAPIServer(t *testing.T, dir string, etcd *etcdMember) *rest.Config {
	t.Helper()
	bin := kubeAPIServerBinary(t)
	ca, err := pki.LoadOrCreateCA(dir, "serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.Identity{CommonName: "kube-apiserver", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	_, saKeyPEM, err := pki.NewKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"serving.crt": certPEM, "serving.key": keyPEM, "sa.key": saKeyPEM,
		"tokens.csv": []byte(adminToken + ",differential-admin,differential-admin,system:masters\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := ports.Free(t)
	args := []string{
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--tls-cert-file=" + filepath.Join(dir, "serving.crt"), "--tls-private-key-file=" + filepath.Join(dir, "serving.key"),
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--etcd-servers=" + etcd.Endpoint,
		"--etcd-cafile=" + etcd.CAFile, "--etcd-certfile=" + etcd.CertFile, "--etcd-keyfile=" + etcd.KeyFile,
		"--storage-media-type=application/vnd.kubernetes.protobuf",
		"--endpoint-reconciler-type=none",
		"--v=0",
	}
	logPath := filepath.Join(dir, "kube-apiserver.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("kube-apiserver log (tail):\n%s", tail(logPath, 40))
		}
	})

	cfg := &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(port),
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "serving-ca.crt")},
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.Poll(t.Context(), 3*time.Minute, "kube-apiserver's /readyz to answer 200", func(ctx context.Context) error {
		select {
		case err := <-exited:
			t.Fatalf("kube-apiserver exited: %v\n%s", err, tail(logPath, 40))
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, tail(logPath, 40))
	}
	return cfg
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
