package apiserver

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func createConfigMap(t *testing.T, s *testServer, name string, finalizers ...string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
	created, err := s.client.CoreV1().ConfigMaps("default").Create(testContext(t), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap %s: %v", name, err)
	}
	return created
}

func TestDeletePropagationPolicyBecomesFinalizer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	policy := func(p metav1.DeletionPropagation) metav1.DeleteOptions {
		return metav1.DeleteOptions{PropagationPolicy: &p}
	}
	//lint:ignore SA1019 the legacy field is under test
	orphan := func(b bool) metav1.DeleteOptions { return metav1.DeleteOptions{OrphanDependents: &b} }
	cases := []struct {
		name      string
		options   metav1.DeleteOptions
		finalizer string // "" means the object is gone at once
	}{
		{"orphan", policy(metav1.DeletePropagationOrphan), metav1.FinalizerOrphanDependents},
		{"foreground", policy(metav1.DeletePropagationForeground), metav1.FinalizerDeleteDependents},
		{"background", policy(metav1.DeletePropagationBackground), ""},
		{"default", metav1.DeleteOptions{}, ""},
		{"legacy-orphan", orphan(true), metav1.FinalizerOrphanDependents},
		{"legacy-no-orphan", orphan(false), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			cms := s.client.CoreV1().ConfigMaps("default")
			createConfigMap(t, s, tc.name)
			if err := cms.Delete(ctx, tc.name, tc.options); err != nil {
				t.Fatalf("delete: %v", err)
			}
			got, err := cms.Get(ctx, tc.name, metav1.GetOptions{})
			if tc.finalizer == "" {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("want the object gone at once, got %v, %v", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("want the object kept by its finalizer: %v", err)
			}
			if !slices.Equal(got.Finalizers, []string{tc.finalizer}) || got.DeletionTimestamp == nil {
				t.Fatalf("want finalizers [%s] and a deletionTimestamp, got %v, %v", tc.finalizer, got.Finalizers, got.DeletionTimestamp)
			}
			if g := got.DeletionGracePeriodSeconds; g == nil || *g != 0 {
				t.Fatalf("want deletionGracePeriodSeconds 0, got %v", g)
			}
		})
	}
}

func TestDeleteWithBothOrphanFieldsIsInvalidAndChangesNothing(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	createConfigMap(t, s, "both")
	before := storeRevision(t, s)
	yes, p := true, metav1.DeletePropagationForeground
	//lint:ignore SA1019 the legacy field is under test
	err := s.client.CoreV1().ConfigMaps("default").Delete(ctx, "both", metav1.DeleteOptions{OrphanDependents: &yes, PropagationPolicy: &p})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	assertStoreUnchanged(t, s, before)
}

func TestSecondDeleteChangesPropagationAndKeepsOtherFinalizers(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	createConfigMap(t, s, "owner", "example.com/hold")
	orphan, foreground := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	first, err := cms.Get(ctx, "owner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	second, err := cms.Get(ctx, "owner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"example.com/hold", metav1.FinalizerDeleteDependents}; !slices.Equal(second.Finalizers, want) {
		t.Fatalf("finalizers after a foreground delete of an orphaning owner: got %v, want %v", second.Finalizers, want)
	}
	if !second.DeletionTimestamp.Equal(first.DeletionTimestamp) {
		t.Fatalf("deletionTimestamp moved: %v then %v", first.DeletionTimestamp, second.DeletionTimestamp)
	}

	// A delete that asks nothing new keeps the recorded policy and writes nothing.
	before := storeRevision(t, s)
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	assertStoreUnchanged(t, s, before)
}

func TestDryRunPropagationWritesNothing(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	createConfigMap(t, s, "dry")
	before := storeRevision(t, s)
	orphan := metav1.DeletePropagationOrphan
	if err := s.client.CoreV1().ConfigMaps("default").Delete(ctx, "dry", metav1.DeleteOptions{PropagationPolicy: &orphan, DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	assertStoreUnchanged(t, s, before)
}
