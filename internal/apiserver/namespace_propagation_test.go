package apiserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// createNamespaceWithContent creates namespace name holding one ConfigMap
// (with finalizers, if given, which keep it until removed).
func createNamespaceWithContent(t *testing.T, s *testServer, name string, contentFinalizers ...string) *corev1.Namespace {
	t.Helper()
	ctx := testContext(t)
	ns, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "content", Finalizers: contentFinalizers}}
	if _, err := s.client.CoreV1().ConfigMaps(name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create content of %s: %v", name, err)
	}
	waitNamespaceSettled(t, s, name)
	return ns
}

// waitNamespaceSettled waits until the namespace controller has given a new
// namespace its default ServiceAccount: the last write it makes on its own,
// which a test that compares store revisions must not count.
func waitNamespaceSettled(t *testing.T, s *testServer, name string) {
	t.Helper()
	wait.UntilTrue(t, 30*time.Second, "namespace "+name+" has its default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := s.client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

func namespaceGone(s *testServer, name string) func(ctx context.Context) (bool, error) {
	return gone(func(ctx context.Context) error {
		_, err := s.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// dropFinalizers removes every metadata finalizer, as their owner (the
// garbage collector) does when its work is done.
func dropFinalizers(ctx context.Context, s *testServer, namespace string) (*corev1.Namespace, error) {
	return s.client.CoreV1().Namespaces().Patch(ctx, namespace, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
}

func TestNamespaceDeletionRecordsThePropagationPolicy(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s)
	policy := func(p metav1.DeletionPropagation) metav1.DeleteOptions {
		return metav1.DeleteOptions{PropagationPolicy: &p}
	}
	//lint:ignore SA1019 the legacy field is under test
	orphan := func(b bool) metav1.DeleteOptions { return metav1.DeleteOptions{OrphanDependents: &b} }
	cases := []struct {
		name      string
		options   metav1.DeleteOptions
		finalizer string // "" means the namespace goes once its content is gone
	}{
		{"orphan", policy(metav1.DeletePropagationOrphan), metav1.FinalizerOrphanDependents},
		{"foreground", policy(metav1.DeletePropagationForeground), metav1.FinalizerDeleteDependents},
		{"background", policy(metav1.DeletePropagationBackground), ""},
		{"no-policy", metav1.DeleteOptions{}, ""},
		{"legacy-orphan", orphan(true), metav1.FinalizerOrphanDependents},
		// As upstream's namespace storage: not orphaning a namespace's
		// dependents means deleting them first.
		{"legacy-no-orphan", orphan(false), metav1.FinalizerDeleteDependents},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			createNamespaceWithContent(t, s, tc.name)
			if err := s.client.CoreV1().Namespaces().Delete(ctx, tc.name, tc.options); err != nil {
				t.Fatalf("delete: %v", err)
			}
			// The content goes whatever the policy.
			wait.UntilTrue(t, 30*time.Second, "the content to be deleted", gone(func(ctx context.Context) error {
				_, err := s.client.CoreV1().ConfigMaps(tc.name).Get(ctx, "content", metav1.GetOptions{})
				return err
			}))
			if tc.finalizer == "" {
				wait.UntilTrue(t, 30*time.Second, "the namespace to be removed", namespaceGone(s, tc.name))
				return
			}
			var held *corev1.Namespace
			wait.UntilTrue(t, 30*time.Second, "the namespace to be finalized (spec.finalizers emptied)", func(ctx context.Context) (bool, error) {
				ns, err := s.client.CoreV1().Namespaces().Get(ctx, tc.name, metav1.GetOptions{})
				held = ns
				return err == nil && len(ns.Spec.Finalizers) == 0, err
			})
			if !slices.Equal(held.Finalizers, []string{tc.finalizer}) || held.DeletionTimestamp == nil || held.Status.Phase != corev1.NamespaceTerminating {
				t.Fatalf("held namespace: finalizers %v, deletionTimestamp %v, phase %s; want [%s], set, Terminating",
					held.Finalizers, held.DeletionTimestamp, held.Status.Phase, tc.finalizer)
			}
			if _, err := dropFinalizers(ctx, s, tc.name); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("remove the finalizer: %v", err)
			}
			wait.UntilTrue(t, 30*time.Second, "the namespace to be removed with its last finalizer", namespaceGone(s, tc.name))
		})
	}
}

func TestNamespaceStaysUntilContentIsGoneEvenWithoutFinalizers(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s)
	ctx := testContext(t)
	createNamespaceWithContent(t, s, "held", "example.com/hold")
	orphan := metav1.DeletePropagationOrphan
	if err := s.client.CoreV1().Namespaces().Delete(ctx, "held", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 30*time.Second, "the content to be marked for deletion", func(ctx context.Context) (bool, error) {
		cm, err := s.client.CoreV1().ConfigMaps("held").Get(ctx, "content", metav1.GetOptions{})
		return err == nil && cm.DeletionTimestamp != nil, err
	})
	// The orphan finalizer's owner is done before the content is gone:
	// the namespace must wait for its content.
	ns, err := dropFinalizers(ctx, s, "held")
	if err != nil {
		t.Fatalf("remove the namespace's finalizer: %v", err)
	}
	if len(ns.Finalizers) != 0 || !hasNamespaceFinalizer(ns.Spec.Finalizers) {
		t.Fatalf("namespace after the patch: finalizers %v, spec.finalizers %v", ns.Finalizers, ns.Spec.Finalizers)
	}
	if _, err := s.client.CoreV1().Namespaces().Get(ctx, "held", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace removed while its content remains: %v", err)
	}
	if _, err := s.client.CoreV1().ConfigMaps("held").Patch(ctx, "content", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("release the content: %v", err)
	}
	wait.UntilTrue(t, 30*time.Second, "the namespace to be removed", namespaceGone(s, "held"))
}

func TestSecondNamespaceDeleteKeepsTheFirstPolicy(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s)
	ctx := testContext(t)
	createNamespaceWithContent(t, s, "first", "example.com/hold")
	orphan, foreground := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground
	if err := s.client.CoreV1().Namespaces().Delete(ctx, "first", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	first, err := s.client.CoreV1().Namespaces().Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.client.CoreV1().Namespaces().Delete(ctx, "first", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	ns, err := s.client.CoreV1().Namespaces().Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Its content is held by a finalizer, so nothing else writes the namespace.
	if ns.ResourceVersion != first.ResourceVersion || !slices.Equal(ns.Finalizers, []string{metav1.FinalizerOrphanDependents}) {
		t.Fatalf("after a second delete: resourceVersion %s (was %s), finalizers %v; want it untouched with the first delete's [%s]",
			ns.ResourceVersion, first.ResourceVersion, ns.Finalizers, metav1.FinalizerOrphanDependents)
	}
}

func TestNamespaceDryRunDeleteWritesNothing(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s)
	ctx := testContext(t)
	createNamespaceWithContent(t, s, "dry")
	before := storeRevision(t, s)
	foreground := metav1.DeletePropagationForeground
	if err := s.client.CoreV1().Namespaces().Delete(ctx, "dry", metav1.DeleteOptions{PropagationPolicy: &foreground, DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	assertStoreUnchanged(t, s, before)
	ns, err := s.client.CoreV1().Namespaces().Get(ctx, "dry", metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp != nil || len(ns.Finalizers) != 0 {
		t.Fatalf("after a dry-run delete: %v, deletionTimestamp %v, finalizers %v", err, ns.DeletionTimestamp, ns.Finalizers)
	}
}

// createDependentOf creates a ConfigMap in "default" that the namespace owns
// (blocking its foreground deletion), held by finalizers if given.
func createDependentOf(t *testing.T, s *testServer, ns *corev1.Namespace, finalizers ...string) string {
	t.Helper()
	block := true
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned-by-" + ns.Name, Finalizers: finalizers,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID, BlockOwnerDeletion: &block}}}}
	if _, err := s.client.CoreV1().ConfigMaps("default").Create(testContext(t), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create dependent of %s: %v", ns.Name, err)
	}
	return cm.Name
}

func TestNamespacePropagationWithTheGarbageCollector(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s)
	startGarbageCollector(t, s)
	cms := s.client.CoreV1().ConfigMaps("default")
	deleteNamespace := func(t *testing.T, name string, p metav1.DeletionPropagation) {
		t.Helper()
		if err := s.client.CoreV1().Namespaces().Delete(testContext(t), name, metav1.DeleteOptions{PropagationPolicy: &p}); err != nil {
			t.Fatalf("delete namespace %s: %v", name, err)
		}
	}
	dependentGone := func(name string) func(ctx context.Context) (bool, error) {
		return gone(func(ctx context.Context) error { _, err := cms.Get(ctx, name, metav1.GetOptions{}); return err })
	}

	t.Run("orphan keeps the dependent, without its ownerReference", func(t *testing.T) {
		ns := createNamespaceWithContent(t, s, "ns-orphan")
		dep := createDependentOf(t, s, ns)
		deleteNamespace(t, ns.Name, metav1.DeletePropagationOrphan)
		wait.UntilTrue(t, 30*time.Second, "the namespace to be removed", namespaceGone(s, ns.Name))
		got, err := cms.Get(testContext(t), dep, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("orphaned dependent: %v", err)
		}
		if len(got.OwnerReferences) != 0 {
			t.Fatalf("orphaned dependent still names its owner: %v", got.OwnerReferences)
		}
	})

	t.Run("foreground removes the dependent first", func(t *testing.T) {
		ns := createNamespaceWithContent(t, s, "ns-foreground")
		dep := createDependentOf(t, s, ns, "example.com/hold") // held, so the namespace is seen waiting
		deleteNamespace(t, ns.Name, metav1.DeletePropagationForeground)
		wait.UntilTrue(t, 30*time.Second, "the dependent to be marked for deletion", func(ctx context.Context) (bool, error) {
			cm, err := cms.Get(ctx, dep, metav1.GetOptions{})
			return err == nil && cm.DeletionTimestamp != nil, err
		})
		wait.UntilTrue(t, 30*time.Second, "the namespace's content to be gone and the namespace finalized", func(ctx context.Context) (bool, error) {
			got, err := s.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
			return err == nil && len(got.Spec.Finalizers) == 0, err
		})
		got, err := s.client.CoreV1().Namespaces().Get(testContext(t), ns.Name, metav1.GetOptions{})
		if err != nil || !slices.Equal(got.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
			t.Fatalf("namespace while a blocking dependent remains: %v, finalizers %v; want it held by %s", err, got.Finalizers, metav1.FinalizerDeleteDependents)
		}
		if _, err := cms.Patch(testContext(t), dep, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("release the dependent: %v", err)
		}
		wait.UntilTrue(t, 30*time.Second, "the dependent to be gone", dependentGone(dep))
		wait.UntilTrue(t, 30*time.Second, "the namespace to be removed", namespaceGone(s, ns.Name))
	})

	t.Run("background removes the namespace, then the dependent", func(t *testing.T) {
		ns := createNamespaceWithContent(t, s, "ns-background")
		dep := createDependentOf(t, s, ns)
		deleteNamespace(t, ns.Name, metav1.DeletePropagationBackground)
		wait.UntilTrue(t, 30*time.Second, "the namespace to be removed", namespaceGone(s, ns.Name))
		wait.UntilTrue(t, 30*time.Second, "the dependent to be collected", dependentGone(dep))
	})
}
