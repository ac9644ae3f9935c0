package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/pki"
	testcri "github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestNodeServerServesPodsAndMetrics runs the whole agent against
// containerd with its node server on, as Run assembles it (metrics on the
// CRI connection), and reads /pods and /metrics as the API server would.
func TestNodeServerServesPodsAndMetrics(t *testing.T) {
	ctd := testcri.Start(t)
	dir := t.TempDir()
	serverCA, err := pki.LoadOrCreateCA(dir, "server-ca")
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := pki.LoadOrCreateCA(dir, "client-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := serverCA.Issue(pki.Identity{CommonName: "system:node:node-a", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := Config{NodeName: "node-a", NodeIP: "127.0.0.1", DataDir: t.TempDir(), RuntimeEndpoint: ctd.Endpoint,
		Address: "127.0.0.1", Port: 0,
		TLSCertFile: write("node.crt", certPEM), TLSPrivateKeyFile: write("node.key", keyPEM), ClientCAFile: write("client-ca.crt", clientCA.CertPEM)}

	m, err := newMetrics()
	if err != nil {
		t.Fatal(err)
	}
	rt, v, err := cri.Dial(t.Context(), ctd.Endpoint, cri.WithMetrics(m.cri))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	client := fake.NewClientset()
	a := New(cfg, client, rt, v, clock.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	a.metrics = m
	runAgent(t, a)

	pod := createSleepPod(t, client, "web")
	var port int32
	wait.UntilTrue(t, 2*time.Minute, "the pod running and the node server's port reported", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		n, nerr := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil || nerr != nil {
			return false, nil
		}
		port = n.Status.DaemonEndpoints.KubeletEndpoint.Port
		return p.Status.Phase == corev1.PodRunning && port != 0, nil
	})

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.CertPEM)
	c, k, err := clientCA.Issue(pki.APIServerClientIdentity)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	apiServer := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}}
	get := func(path string) string {
		t.Helper()
		resp, err := apiServer.Get("https://127.0.0.1:" + strconv.Itoa(int(port)) + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return string(body)
	}

	var list corev1.PodList
	if err := json.Unmarshal([]byte(get("/pods")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].UID != pod.UID {
		t.Errorf("/pods = %d items, want only uid-web", len(list.Items))
	}
	metrics := get("/metrics")
	for _, want := range []string{
		"berth_agent_pod_workers 1",
		`berth_agent_image_pull_duration_seconds_count{result="success"} 1`,
		`berth_agent_cri_operations_total{operation="RunPodSandbox"} 1`,
		`berth_agent_pod_sync_duration_seconds_count{result="success"}`,
		"process_resident_memory_bytes",
		"go_goroutines",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
