package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPullCredentialsMatchTheImageRegistry(t *testing.T) {
	m := unitManager(t, Config{})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "default"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{
			"https://registry.example.test":{"auth":"YWxpY2U6czNjcmV0"},
			"other.test":{"username":"bob","password":"pw"}}}`)},
	}
	if _, err := m.client.CoreV1().Secrets("default").Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "absent"}}}}
	pod.Namespace = "default"
	auths, err := m.pullCredentials(t.Context(), pod, "registry.example.test/team/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(auths) != 1 || auths[0].Username != "alice" || auths[0].Password != "s3cret" {
		t.Fatalf("auths = %+v, want alice's only", auths)
	}
	if auths, _ := m.pullCredentials(t.Context(), pod, "busybox:latest"); len(auths) != 0 {
		t.Fatalf("docker.io image got credentials %+v", auths)
	}
}

func TestRegistryHost(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                      "docker.io",
		"library/busybox:1":            "docker.io",
		"registry.example.test/a/b:1":  "registry.example.test",
		"localhost/x":                  "localhost",
		"127.0.0.1:5000/x@sha256:abcd": "127.0.0.1:5000",
	} {
		if got := registryHost(in); got != want {
			t.Errorf("registryHost(%q) = %q, want %q", in, got, want)
		}
	}
}
