package apiserver

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A namespace held by another owner's spec finalizer stays Terminating,
// empty, after the namespace controller has done its part, until that
// owner takes its finalizer out through namespaces/finalize — the way
// upstream clusters let every namespace finalizer's owner finish, and the
// way users unstick a namespace.
func TestNamespaceFinalizeSubresource(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s)
	ctx := testContext(t)
	const hold corev1.FinalizerName = "example.com/hold"
	namespaces := s.client.CoreV1().Namespaces()
	ns, err := namespaces.Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "held"},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{hold}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if want := []corev1.FinalizerName{hold, finalizerKubernetes}; !slices.Equal(ns.Spec.Finalizers, want) {
		t.Fatalf("spec.finalizers after create = %v, want %v", ns.Spec.Finalizers, want)
	}
	waitNamespaceSettled(t, s, "held")

	// As upstream, an update of the namespace itself keeps spec.finalizers.
	ns.Spec.Finalizers = nil
	ns.Labels = map[string]string{"updated": "yes"}
	ns, err = namespaces.Update(ctx, ns, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if len(ns.Spec.Finalizers) != 2 || ns.Labels["updated"] != "yes" {
		t.Fatalf("after update: finalizers %v, labels %v; want both finalizers kept and the label changed", ns.Spec.Finalizers, ns.Labels)
	}

	// A bad finalizer name is 422 with its field path, and changes nothing.
	bad := ns.DeepCopy()
	bad.Spec.Finalizers = []corev1.FinalizerName{"not a name!"}
	rev := storeRevision(t, s)
	_, err = namespaces.Finalize(ctx, bad, metav1.UpdateOptions{})
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || !hasCause(status.Status(), "spec.finalizers[0]") {
		t.Fatalf("finalize with a bad name: %v, want 422 on spec.finalizers[0]", err)
	}
	if got := storeRevision(t, s); got != rev {
		t.Fatalf("a rejected finalize wrote: revision %d -> %d", rev, got)
	}

	if err := namespaces.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wait.UntilTrue(t, 30*time.Second, "the namespace controller to take out its own finalizer", func(ctx context.Context) (bool, error) {
		ns, err = namespaces.Get(ctx, "held", metav1.GetOptions{})
		return err == nil && slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{hold}), err
	})
	// That same write would have removed it, had no other finalizer held it.
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("held namespace phase %s, want Terminating", ns.Status.Phase)
	}

	ns.Spec.Finalizers = nil
	if _, err := namespaces.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	if _, err := namespaces.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after the last finalizer went: %v, want 404", err)
	}
}
