package main

import (
	"context"
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
	admin, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = token
	cs := kubernetes.NewForConfigOrDie(cfg)
	_, err = cs.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	const who = "system:serviceaccount:default:default"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), who) {
		t.Fatalf("listing kube-system secrets with the pod's token: %v; want 403 naming %s", err, who)
	}
}
