package pods

import (
	"context"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// The downward API as the kubelet serves it: the pod's IPs and the node's,
// metadata by upstream's field paths, and limits a container leaves unset
// reported as the node's allocatable.
func TestDownwardAPIAsTheKubelet(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("4Gi"),
	}}}
	m := New(Config{NodeName: testNode, NodeIP: "192.0.2.7", DataDir: t.TempDir()}, fake.NewClientset(node), nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", Labels: map[string]string{"b": "2", "a": "1"}, Annotations: map[string]string{"note": "x"}},
		Spec: corev1.PodSpec{NodeName: testNode, ServiceAccountName: "robot", Containers: []corev1.Container{
			{Name: "limited", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
			{Name: "open"},
		}},
		Status: corev1.PodStatus{PodIP: "10.88.0.5", PodIPs: []corev1.PodIP{{IP: "10.88.0.5"}, {IP: "fd00::5"}}},
	}
	ctx := context.Background()
	for path, want := range map[string]string{
		"metadata.name":           "web",
		"metadata.namespace":      "apps",
		"metadata.labels['a']":    "1",
		"metadata.labels":         "a=\"1\"\nb=\"2\"",
		"metadata.annotations":    "note=\"x\"",
		"spec.nodeName":           testNode,
		"spec.serviceAccountName": "robot",
		"status.hostIP":           "192.0.2.7",
		"status.hostIPs":          "192.0.2.7",
		"status.podIP":            "10.88.0.5",
		"status.podIPs":           "10.88.0.5,fd00::5",
	} {
		if got, err := m.fieldValue(pod, path); err != nil || got != want {
			t.Errorf("fieldRef %s = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := m.fieldValue(pod, "spec.nodeSelector"); err == nil {
		t.Error("an unsupported field path gave no error")
	}

	limited, open := &pod.Spec.Containers[0], &pod.Spec.Containers[1]
	mi := resource.MustParse("1Mi")
	for _, tc := range []struct {
		c    *corev1.Container
		ref  corev1.ResourceFieldSelector
		want string
	}{
		{limited, corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: mi}, "64"},
		{open, corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: mi}, "4096"}, // the node's allocatable
		{open, corev1.ResourceFieldSelector{Resource: "limits.cpu"}, "3"},
		{open, corev1.ResourceFieldSelector{Resource: "limits.memory", ContainerName: "limited", Divisor: mi}, "64"},
	} {
		if got, err := m.containerResourceValue(ctx, pod, tc.c, &tc.ref); err != nil || got != tc.want {
			t.Errorf("%s's %s (container %q) = %q, %v; want %q", tc.c.Name, tc.ref.Resource, tc.ref.ContainerName, got, err, tc.want)
		}
	}

	files, err := m.downwardPayload(ctx, pod, []corev1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "cpu_limit", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "open", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
	}, ptr.To[int32](0o644), nil)
	if err != nil || string(files["labels"].Data) != "a=\"1\"\nb=\"2\"" || string(files["cpu_limit"].Data) != "3000" {
		t.Errorf("downward files %v, %v", files, err)
	}
}
