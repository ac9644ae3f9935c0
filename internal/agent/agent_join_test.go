package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestAgentJoinsWithToken runs `berth server` and `berth agent --server
// --token` as processes over containerd: the agent joins with the server's
// default token, its Node turns Ready and it runs a pod; restarted after
// the token is deleted, it carries on with the certificate it obtained.
func TestAgentJoinsWithToken(t *testing.T) {
	ctd := cri.Start(t)
	bin := buildBerth(t)
	dataDir := t.TempDir()
	port := ports.Free(t)
	serverDir := filepath.Join(dataDir, "server")
	startBerth(t, bin, "server.log", "server", "--data-dir", serverDir,
		"--bind-address", "127.0.0.1", "--port", strconv.Itoa(port), "--disable-agent")
	client := waitForServer(t, filepath.Join(serverDir, "admin.kubeconfig"))
	var token string
	wait.Until(t, 2*time.Minute, "the default join token written", func() bool {
		data, err := os.ReadFile(filepath.Join(serverDir, "token"))
		token = strings.TrimSpace(string(data))
		return err == nil
	})

	agentDir := filepath.Join(dataDir, "agent")
	agentArgs := []string{"agent", "--server", "https://127.0.0.1:" + strconv.Itoa(port), "--token", token,
		"--node-name", "node-join", "--data-dir", agentDir, "--runtime-endpoint", ctd.Endpoint, "--proxy-mode", "none",
		// No disk pressure on a nearly full CI disk, as the test clusters' nodes.
		"--eviction-hard", cluster.EvictionHard}
	agent := startBerth(t, bin, "agent-1.log", agentArgs...)
	waitNodeReady(t, client, "node-join")

	if _, err := client.CoreV1().Pods("default").Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "joined", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: cri.Image(images.Busybox), Command: []string{"sleep", "3600"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := waitRunning(t, client, "joined"); p.Spec.NodeName != "node-join" {
		t.Fatalf("pod bound to %q", p.Spec.NodeName)
	}

	// The token is gone; the agent's own certificate is all it needs now.
	j, err := bootstraptoken.ParseJoinToken(token)
	if err != nil {
		t.Fatal(err)
	}
	if err := bootstraptoken.Delete(t.Context(), client, j.ID()); err != nil {
		t.Fatal(err)
	}
	agent.stop()
	before, err := client.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startBerth(t, bin, "agent-2.log", agentArgs...)
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "after-restart", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: cri.Image(images.Busybox), Command: []string{"sleep", "3600"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, client, "after-restart")
	after, err := client.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Only client CSRs count: a serving certificate the first run had not
	// yet stored is rightly requested again (kubelet-serving signer).
	if clientCSRs(before.Items) == 0 {
		t.Fatal("the first join left no client CSR to compare with")
	}
	if b, a := clientCSRs(before.Items), clientCSRs(after.Items); a != b {
		t.Errorf("the restarted agent sent a client CSR (%d → %d) instead of using its certificate", b, a)
	}
	// What the agent keeps: its own key and certificate and a kubeconfig
	// naming them, all private; nothing of the admin's or the store's.
	for _, f := range []string{"node.kubeconfig", "pki/node-client-current.pem"} {
		st, err := os.Stat(filepath.Join(agentDir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
		} else if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	kc, err := os.ReadFile(filepath.Join(agentDir, "node.kubeconfig"))
	if err != nil || strings.Contains(string(kc), "token") {
		t.Errorf("node kubeconfig (%v) holds a token:\n%s", err, kc)
	}
}

func waitNodeReady(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	wait.UntilTrue(t, 2*time.Minute, name+" registered and Ready", func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// clientCSRs counts the node client certificate requests among csrs.
func clientCSRs(csrs []certificatesv1.CertificateSigningRequest) int {
	n := 0
	for _, c := range csrs {
		if c.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName {
			n++
		}
	}
	return n
}
