package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/testkit/cluster"
)

// apiAccessPath is where the ServiceAccount admission plugin mounts
// kube-api-access-* in every container.
const apiAccessPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// staticToken is the one bearer token of the --token-auth-file the
// single-node test gives its server.
const staticToken = "static-token-for-jane"

func staticTokenFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(staticToken+",jane,uid-jane,ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkStaticToken: a token from --token-auth-file authenticates as its
// user (refused by name for what jane was never granted), an unknown one
// not at all (401).
func checkStaticToken(t *testing.T, srv *cluster.Server) {
	t.Helper()
	_, err := srv.BearerClient(t, staticToken).CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"jane"`) {
		t.Errorf("listing kube-system secrets with jane's static token: %v; want 403 naming jane", err)
	}
	_, err = srv.BearerClient(t, "not-a-token").CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("listing with an unknown token: %v; want 401", err)
	}
}

// checkServiceAccountToken reads what the agent put in pod's
// kube-api-access-* volume (mounted by admission, not by the pod's author):
// the namespace, the CA that verifies the API server (from
// kube-root-ca.crt), and a token the API server takes as the pod's service
// account: authenticated (not 401), and refused (403) by name for what that
// account was never granted.
func checkServiceAccountToken(t *testing.T, srv *cluster.Server, pod string) {
	t.Helper()
	if ns := srv.Kubectl(t, "", "exec", pod, "--", "cat", apiAccessPath+"/namespace"); ns != "default" {
		t.Errorf("mounted namespace %q, want default", ns)
	}
	serverCA, err := os.ReadFile(filepath.Join(srv.DataDir, "pki", "server-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if ca := srv.Kubectl(t, "", "exec", pod, "--", "cat", apiAccessPath+"/ca.crt"); ca != string(serverCA) {
		t.Errorf("mounted ca.crt is not the server CA:\n%s", ca)
	}
	token := strings.TrimSpace(srv.Kubectl(t, "", "exec", pod, "--", "cat", apiAccessPath+"/token"))
	if strings.Count(token, ".") != 2 {
		t.Fatalf("mounted token is not a JWT: %q", token)
	}
	_, err = srv.BearerClient(t, token).CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	const who = "system:serviceaccount:default:default"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), who) {
		t.Fatalf("listing kube-system secrets with the pod's token: %v; want 403 naming %s", err, who)
	}
}

// checkEtcHosts: the pod's /etc/hosts is the agent's managed file, with
// the pod's own name on its IP.
func checkEtcHosts(t *testing.T, srv *cluster.Server, pod, ip string) {
	t.Helper()
	hosts := srv.Kubectl(t, "", "exec", pod, "--", "cat", "/etc/hosts")
	if !strings.HasPrefix(hosts, "# Kubernetes-managed hosts file.") || !strings.Contains(hosts, ip+"\t"+pod) {
		t.Errorf("/etc/hosts of %s (IP %s):\n%s", pod, ip, hosts)
	}
}
