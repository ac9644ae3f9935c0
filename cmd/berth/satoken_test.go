package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
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
func checkStaticToken(t *testing.T, dataDir string) {
	t.Helper()
	_, err := bearerClient(t, dataDir, staticToken).CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"jane"`) {
		t.Errorf("listing kube-system secrets with jane's static token: %v; want 403 naming jane", err)
	}
	_, err = bearerClient(t, dataDir, "not-a-token").CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("listing with an unknown token: %v; want 401", err)
	}
}

// bearerClient is a client of the cluster that presents only token.
func bearerClient(t *testing.T, dataDir, token string) kubernetes.Interface {
	t.Helper()
	admin, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = token
	return kubernetes.NewForConfigOrDie(cfg)
}

// checkServiceAccountToken reads the token the agent projected into pod
// and shows that the API server takes it as the pod's service account:
// authenticated (not 401), and refused (403) by name for what that
// account was never granted.
func checkServiceAccountToken(t *testing.T, dataDir, pod string) {
	t.Helper()
	token := strings.TrimSpace(kubectl(t, dataDir, "", "exec", pod, "--", "cat", tokenMountPath+"/token"))
	if strings.Count(token, ".") != 2 {
		t.Fatalf("projected token is not a JWT: %q", token)
	}
	_, err := bearerClient(t, dataDir, token).CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	const who = "system:serviceaccount:default:default"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), who) {
		t.Fatalf("listing kube-system secrets with the pod's token: %v; want 403 naming %s", err, who)
	}
}
