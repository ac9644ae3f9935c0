package server_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestNamespaceLifecycleAdmission: upstream's NamespaceLifecycle plugin
// runs first in the chain. A create into a namespace that does not exist is
// 404 even when the object is also invalid (validation never sees it); a
// create into a terminating namespace is 403 with the NamespaceTerminating
// cause; updates there still pass; default, kube-system and kube-public
// may not be deleted.
func TestNamespaceLifecycleAdmission(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()

	invalid := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}
	_, err := s.Admin.CoreV1().ConfigMaps("nowhere").Create(ctx, invalid, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("invalid configmap in a missing namespace: %v, want 404 before validation", err)
	}

	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic} {
		if err := s.Admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("delete namespace %s: %v, want 403", ns, err)
		}
	}

	// A finalizer of its own keeps the namespace Terminating.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "closing"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/hold"}}}
	if _, err := s.Admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kept, err := s.Admin.CoreV1().ConfigMaps("closing").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releaseNamespace(t, s.Admin.CoreV1().Namespaces(), "closing") })
	if err := s.Admin.CoreV1().Namespaces().Delete(ctx, "closing", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	late := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}
	_, err = s.Admin.CoreV1().ConfigMaps("closing").Create(ctx, late, metav1.CreateOptions{})
	status, ok := err.(apierrors.APIStatus)
	if !apierrors.IsForbidden(err) || !ok || status.Status().Details == nil || len(status.Status().Details.Causes) != 1 ||
		status.Status().Details.Causes[0].Type != corev1.NamespaceTerminatingCause || status.Status().Details.Causes[0].Field != "metadata.namespace" {
		t.Fatalf("create in a terminating namespace: %#v, want 403 with the %s cause on metadata.namespace", err, corev1.NamespaceTerminatingCause)
	}
	kept.Data = map[string]string{"k": "v"}
	err = wait.PollTrue(ctx, 30*time.Second, "an update in the terminating namespace", func(ctx context.Context) (bool, error) {
		// The namespace controller may delete the configmap meanwhile: then there is nothing to update.
		_, err := s.Admin.CoreV1().ConfigMaps("closing").Update(ctx, kept, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			cur, getErr := s.Admin.CoreV1().ConfigMaps("closing").Get(ctx, "kept", metav1.GetOptions{})
			if getErr == nil {
				kept = cur
				kept.Data = map[string]string{"k": "v"}
			}
			return false, nil
		}
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("update in a terminating namespace: %v, want it allowed", err)
	}
}

// releaseNamespace drops the test's own namespace finalizer, so the
// namespace may go.
func releaseNamespace(t *testing.T, nss interface {
	Get(context.Context, string, metav1.GetOptions) (*corev1.Namespace, error)
	Finalize(context.Context, *corev1.Namespace, metav1.UpdateOptions) (*corev1.Namespace, error)
}, name string) {
	ns, err := nss.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return
	}
	ns.Spec.Finalizers = nil
	if _, err := nss.Finalize(context.Background(), ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("release namespace %s: %v", name, err)
	}
}
