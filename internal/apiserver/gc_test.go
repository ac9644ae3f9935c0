package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/agent/node"
	"github.com/berth/berth/internal/controller/garbagecollector"
	"github.com/berth/berth/internal/testkit/wait"
)

// startGarbageCollector runs the real collector against s until the test
// ends, watching through s's local reads as berth server's collector does.
func startGarbageCollector(t *testing.T, s *testServer) *garbagecollector.Controller {
	t.Helper()
	return startGarbageCollectorWith(t, s, func(ctx context.Context, gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
		return s.local.MetadataListWatch(ctx, &user.DefaultInfo{Name: "collector", Groups: []string{user.AllAuthenticated}}, gvr)
	})
}

// startGarbageCollectorWith runs the collector with local (nil: every
// resource watched over HTTP through the metadata client).
func startGarbageCollectorWith(t *testing.T, s *testServer, local func(context.Context, schema.GroupVersionResource) (cache.ListerWatcher, error)) *garbagecollector.Controller {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	gc, err := garbagecollector.New(ctx, garbagecollector.Config{
		Client:        s.jsonCli,
		Metadata:      metadata.NewForConfigOrDie(s.config),
		LocalMetadata: local,
		Logger:        slog.New(slog.NewTextHandler(testLogWriter{t}, nil)),
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { done <- gc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return gc
}

// family is a ConfigMap owning an unscheduled pod and a secret, both of
// which block its foreground deletion.
type family struct {
	owner  *corev1.ConfigMap
	pod    string
	secret string
}

func createFamily(t *testing.T, s *testServer, name string, secretFinalizers ...string) family {
	t.Helper()
	ctx := testContext(t)
	owner := createConfigMap(t, s, name)
	block := true
	ref := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-pod", OwnerReferences: ref},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
	}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-secret", OwnerReferences: ref, Finalizers: secretFinalizers}}
	if _, err := s.client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	return family{owner: owner, pod: pod.Name, secret: secret.Name}
}

func gone(get func(ctx context.Context) error) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

func (f family) podGone(s *testServer) func(ctx context.Context) (bool, error) {
	return gone(func(ctx context.Context) error {
		_, err := s.client.CoreV1().Pods("default").Get(ctx, f.pod, metav1.GetOptions{})
		return err
	})
}

func (f family) secretGone(s *testServer) func(ctx context.Context) (bool, error) {
	return gone(func(ctx context.Context) error {
		_, err := s.client.CoreV1().Secrets("default").Get(ctx, f.secret, metav1.GetOptions{})
		return err
	})
}

func (f family) ownerGone(s *testServer) func(ctx context.Context) (bool, error) {
	return gone(func(ctx context.Context) error {
		_, err := s.client.CoreV1().ConfigMaps("default").Get(ctx, f.owner.Name, metav1.GetOptions{})
		return err
	})
}

func TestKubectlDeleteCascadeBackgroundRemovesDependents(t *testing.T) {
	t.Parallel()
	t.Run("local reads", func(t *testing.T) {
		s := newTestServer(t)
		startGarbageCollector(t, s)
		testDeleteCascadeBackground(t, s)
	})
	t.Run("over HTTP", func(t *testing.T) {
		s := newTestServer(t)
		startGarbageCollectorWith(t, s, nil)
		testDeleteCascadeBackground(t, s)
	})
}

func testDeleteCascadeBackground(t *testing.T, s *testServer) {
	k := newKubectl(t, s)
	doomed := createFamily(t, s, "doomed")
	kept := createFamily(t, s, "kept")

	k.Must("", []string{"delete", "configmap", doomed.owner.Name, "--cascade=background"}, `configmap "doomed" deleted`)
	wait.UntilTrue(t, 30*time.Second, "the pod to be collected", doomed.podGone(s))
	wait.UntilTrue(t, 30*time.Second, "the secret to be collected", doomed.secretGone(s))

	// The other family's owner lives: its dependents stay.
	ctx := testContext(t)
	if _, err := s.client.CoreV1().Pods("default").Get(ctx, kept.pod, metav1.GetOptions{}); err != nil {
		t.Fatalf("a dependent of a live owner was touched: %v", err)
	}
	if _, err := s.client.CoreV1().Secrets("default").Get(ctx, kept.secret, metav1.GetOptions{}); err != nil {
		t.Fatalf("a dependent of a live owner was touched: %v", err)
	}
}

func TestKubectlDeleteCascadeForegroundWaitsForDependents(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startGarbageCollector(t, s)
	k := newKubectl(t, s)
	ctx := testContext(t)
	// The secret's own finalizer holds it after the collector deletes it,
	// so the owner is seen waiting.
	f := createFamily(t, s, "fg", "example.com/hold")

	k.Must("", []string{"delete", "configmap", f.owner.Name, "--cascade=foreground", "--wait=false"}, `configmap "fg" deleted`)
	wait.UntilTrue(t, 30*time.Second, "the pod to be collected", f.podGone(s))
	wait.UntilTrue(t, 30*time.Second, "the secret to be marked for deletion", func(ctx context.Context) (bool, error) {
		secret, err := s.client.CoreV1().Secrets("default").Get(ctx, f.secret, metav1.GetOptions{})
		return err == nil && secret.DeletionTimestamp != nil, err
	})
	owner, err := s.client.CoreV1().ConfigMaps("default").Get(ctx, f.owner.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the owner must stay while a blocking dependent exists: %v", err)
	}
	if owner.DeletionTimestamp == nil || !slices.Equal(owner.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
		t.Fatalf("the waiting owner: deletionTimestamp %v, finalizers %v", owner.DeletionTimestamp, owner.Finalizers)
	}

	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := s.client.CoreV1().Secrets("default").Patch(ctx, f.secret, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("release the secret: %v", err)
	}
	wait.UntilTrue(t, 30*time.Second, "the secret to be gone", f.secretGone(s))
	wait.UntilTrue(t, 30*time.Second, "the owner to be gone", f.ownerGone(s))
}

func TestKubectlDeleteCascadeOrphanKeepsDependents(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startGarbageCollector(t, s)
	k := newKubectl(t, s)
	f := createFamily(t, s, "orphaner")

	// kubectl waits for the owner to go, which needs the collector (bounded,
	// so that a broken collector fails the test instead of hanging it).
	k.Must("", []string{"delete", "configmap", f.owner.Name, "--cascade=orphan", "--timeout=60s"}, `configmap "orphaner" deleted`)
	wait.UntilTrue(t, 30*time.Second, "the owner to be gone", f.ownerGone(s))
	ctx := testContext(t)
	pod, err := s.client.CoreV1().Pods("default").Get(ctx, f.pod, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("an orphaned pod must stay: %v", err)
	}
	secret, err := s.client.CoreV1().Secrets("default").Get(ctx, f.secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("an orphaned secret must stay: %v", err)
	}
	if len(pod.OwnerReferences) != 0 || len(secret.OwnerReferences) != 0 {
		t.Fatalf("orphans keep references: pod %v, secret %v", pod.OwnerReferences, secret.OwnerReferences)
	}
}

func TestDependentOfAbsentOwnerIsCollected(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startGarbageCollector(t, s)
	ctx := testContext(t)
	owner := createConfigMap(t, s, "recreated")
	if err := s.client.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Same name, new UID: the reference to the old one dangles.
	createConfigMap(t, s, "recreated")
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stray", OwnerReferences: []metav1.OwnerReference{ref}}}
	if _, err := s.client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 30*time.Second, "the stray secret to be collected", gone(func(ctx context.Context) error {
		_, err := s.client.CoreV1().Secrets("default").Get(ctx, "stray", metav1.GetOptions{})
		return err
	}))
	if _, err := s.client.CoreV1().ConfigMaps("default").Get(ctx, "recreated", metav1.GetOptions{}); err != nil {
		t.Fatalf("the new object of the owner's name must stay: %v", err)
	}
}

func TestDeletingNodeCollectsItsLease(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startGarbageCollector(t, s)
	ctx := testContext(t)
	createNodes(t, s, "gc-node")

	// The agent's own lease controller creates the Lease owned by the Node.
	leaseCtx, stopLease := context.WithCancel(ctx)
	leaseDone := make(chan struct{})
	go func() {
		defer close(leaseDone)
		node.NewLeaseController(s.client, "gc-node", clock.RealClock{}, 100*time.Millisecond).Run(leaseCtx)
	}()
	var lease *coordinationv1.Lease
	wait.UntilTrue(t, 30*time.Second, "the node's Lease to name the Node as owner", func(ctx context.Context) (bool, error) {
		l, err := s.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "gc-node", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		lease = l
		return err == nil && len(l.OwnerReferences) == 1, err
	})
	stopLease()
	<-leaseDone

	if err := s.client.CoreV1().Nodes().Delete(ctx, "gc-node", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 30*time.Second, "the Lease to be collected", gone(func(ctx context.Context) error {
		l, err := s.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "gc-node", metav1.GetOptions{})
		if err == nil && l.UID != lease.UID {
			t.Fatalf("a different Lease appeared: %s", l.UID)
		}
		return err
	}))
}

// noSecretLists forbids listing secrets and allows everything else.
var noSecretLists = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetResource() == "secrets" && (a.GetVerb() == "list" || a.GetVerb() == "watch") {
		return authorizer.DecisionDeny, "secrets may not be listed", nil
	}
	return authorizer.DecisionAllow, "", nil
})

func TestCollectorWorksWithoutAccessToSomeResource(t *testing.T) {
	t.Parallel()
	s := newTestServerWith(t, func(c *Config) { c.Authorizer = noSecretLists })
	startGarbageCollector(t, s)
	f := createFamily(t, s, "partial")
	if err := s.client.CoreV1().ConfigMaps("default").Delete(testContext(t), f.owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 30*time.Second, "the pod to be collected although secrets cannot be watched", f.podGone(s))
}

func TestDependentInAnotherNamespaceThanItsOwnerIsCollectedWithAnEvent(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	// The owner exists before the collector starts, so its first list
	// records it and the reference is known to point across namespaces.
	owner := createConfigMap(t, s, "cross-owner")
	startGarbageCollector(t, s)
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cross", Namespace: "elsewhere", OwnerReferences: []metav1.OwnerReference{ref}}}
	if _, err := s.client.CoreV1().Secrets("elsewhere").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 30*time.Second, "the secret to be collected", gone(func(ctx context.Context) error {
		_, err := s.client.CoreV1().Secrets("elsewhere").Get(ctx, "cross", metav1.GetOptions{})
		return err
	}))
	wait.UntilTrue(t, 30*time.Second, "an OwnerRefInvalidNamespace event to be recorded", func(ctx context.Context) (bool, error) {
		events, err := s.client.EventsV1().Events("elsewhere").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "OwnerRefInvalidNamespace" && e.Regarding.Name == "cross" && e.Regarding.Kind == "Secret" {
				return true, nil
			}
		}
		return false, nil
	})
	if _, err := s.client.CoreV1().ConfigMaps("default").Get(ctx, owner.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the owner in the other namespace must stay: %v", err)
	}
}

func TestForegroundDeletionCascadesThroughGenerations(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startGarbageCollector(t, s)
	ctx := testContext(t)
	grandparent := createConfigMap(t, s, "grandparent")
	// The parent is both a dependent (of grandparent) and an owner (of the
	// family's pod and secret), so the collector deletes it in foreground.
	block := true
	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "parent", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: grandparent.Name, UID: grandparent.UID, BlockOwnerDeletion: &block},
	}}}
	parent, err := s.client.CoreV1().ConfigMaps("default").Create(ctx, parent, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	children := family{owner: parent, secret: "child-secret"}
	ref := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: parent.Name, UID: parent.UID, BlockOwnerDeletion: &block}}
	if _, err := s.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: children.secret, OwnerReferences: ref, Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	foreground := metav1.DeletePropagationForeground
	if err := s.client.CoreV1().ConfigMaps("default").Delete(ctx, grandparent.Name, metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 30*time.Second, "the held grandchild to be marked for deletion", func(ctx context.Context) (bool, error) {
		secret, err := s.client.CoreV1().Secrets("default").Get(ctx, children.secret, metav1.GetOptions{})
		return err == nil && secret.DeletionTimestamp != nil, err
	})
	for _, name := range []string{grandparent.Name, parent.Name} {
		cm, err := s.client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s must wait for the held grandchild: %v", name, err)
		}
		if !slices.Contains(cm.Finalizers, metav1.FinalizerDeleteDependents) || cm.DeletionTimestamp == nil {
			t.Fatalf("%s must be in foreground deletion: finalizers %v, deletionTimestamp %v", name, cm.Finalizers, cm.DeletionTimestamp)
		}
	}

	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := s.client.CoreV1().Secrets("default").Patch(ctx, children.secret, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 30*time.Second, "the parent to be gone", children.ownerGone(s))
	wait.UntilTrue(t, 30*time.Second, "the grandparent to be gone", family{owner: grandparent}.ownerGone(s))
}

// A foreground deletion in a circle of owners (each blocking its owner's
// deletion) is not held forever by the circle: as upstream's collector,
// berth's makes a dependent's references non-blocking when the dependent
// it would wait for already waits, and every member goes.
func TestForegroundDeletionIsNotBlockedByADependencyCircle(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startGarbageCollector(t, s)
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	circle := []*corev1.ConfigMap{createConfigMap(t, s, "circle-1"), createConfigMap(t, s, "circle-2"), createConfigMap(t, s, "circle-3")}
	for i, cm := range circle {
		owner := circle[(i+len(circle)-1)%len(circle)] // 1 is owned by 3, 2 by 1, 3 by 2
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`,
			owner.Name, owner.UID)
		if _, err := cms.Patch(ctx, cm.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("owner reference of %s: %v", cm.Name, err)
		}
	}
	foreground := metav1.DeletePropagationForeground
	if err := cms.Delete(ctx, "circle-1", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 30*time.Second, "every member of the circle to be gone", func(ctx context.Context) (bool, error) {
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(list.Items, func(cm corev1.ConfigMap) bool { return strings.HasPrefix(cm.Name, "circle-") }), nil
	})
}
