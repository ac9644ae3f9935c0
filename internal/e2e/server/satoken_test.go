package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/testkit/cluster"
)

// tokenMountPath is where the hello pod mounts its projected token.
const tokenMountPath = "/var/run/secrets/tokens"

// projectedTokenVolume adds a projected service-account token, mounted in
// every container, to pod.
func projectedTokenVolume(pod *corev1.Pod) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
			ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"},
		}}},
	}})
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts,
			corev1.VolumeMount{Name: "token", MountPath: tokenMountPath})
	}
}

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

// checkServiceAccountToken reads the token the agent projected into pod
// and shows that the API server takes it as the pod's service account:
// authenticated (not 401), and refused (403) by name for what that
// account was never granted.
func checkServiceAccountToken(t *testing.T, srv *cluster.Server, pod string) {
	t.Helper()
	token := strings.TrimSpace(srv.Kubectl(t, "", "exec", pod, "--", "cat", tokenMountPath+"/token"))
	if strings.Count(token, ".") != 2 {
		t.Fatalf("projected token is not a JWT: %q", token)
	}
	_, err := srv.BearerClient(t, token).CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	const who = "system:serviceaccount:default:default"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), who) {
		t.Fatalf("listing kube-system secrets with the pod's token: %v; want 403 naming %s", err, who)
	}
}
