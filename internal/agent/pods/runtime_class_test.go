package pods

import (
	"context"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRuntimeHandlerFromRuntimeClass: a pod's sandbox handler is its
// RuntimeClass's handler as the kubelet's RuntimeClass manager resolves it
// from the cluster, the default ("") without a class, and a class that
// does not exist is an error (NotFound) rather than the default.
func TestRuntimeHandlerFromRuntimeClass(t *testing.T) {
	class := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"}, Handler: "test-handler"}
	m := New(Config{NodeName: testNode, DataDir: t.TempDir()}, fake.NewClientset(class), nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.startRuntimeClasses(ctx)

	podWith := func(class *string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{RuntimeClassName: class}}
	}
	for _, tc := range []struct {
		name  string
		class *string
		want  string
	}{
		{"no class", nil, ""},
		{"empty class", new(""), ""},
		{"class with a handler", new("sandboxed"), "test-handler"},
	} {
		got, err := m.runtimeHandler(podWith(tc.class))
		if err != nil || got != tc.want {
			t.Errorf("%s: handler %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if got, err := m.runtimeHandler(podWith(new("missing"))); !apierrors.IsNotFound(err) {
		t.Errorf("missing class: handler %q, error %v; want NotFound", got, err)
	}
}
