package apiserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestGracefulPodDeletion(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	createNodes(t, s, "n1")
	if _, err := pods.Create(ctx, boundPod("bound", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, testPod("unbound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A bound pod is only marked: its node's agent finishes the deletion.
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete bound: %v", err)
	}
	got, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("bound pod gone at once: %v", err)
	}
	if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("deletionTimestamp=%v grace=%v, want set with 30s", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	// Binding a terminating pod is refused (a finalizer keeps this unbound one around).
	held := testPod("held")
	held.Finalizers = []string{"example.com/hold"}
	if _, err := pods.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := storeRevision(t, s)
	err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "held"}, Target: corev1.ObjectReference{Name: "n1"}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "being deleted") {
		t.Fatalf("binding a terminating pod: %v, want 409 being deleted", err)
	}
	assertStoreUnchanged(t, s, before)
	// The agent's final delete, with grace 0, removes it.
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatalf("final delete: %v", err)
	}
	if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after grace-0 delete: %v, want NotFound", err)
	}
	// An unbound pod goes at once.
	if _, err := pods.Create(ctx, testPod("never-bound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "never-bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "never-bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod after delete: %v, want NotFound", err)
	}
}

func TestFinalizersHoldDeletion(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("held object: %v %v, want it kept with a deletionTimestamp", err, got)
	}
	got.Finalizers = nil
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer went: %v, want NotFound", err)
	}
}

func TestNamespaceDeletionEmptiesIt(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s)
	ctx := testContext(t)
	for _, name := range systemNamespaces() {
		if _, err := s.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("system namespace %s: %v", name, err)
		}
	}
	for _, ns := range []string{"default", "kube-system"} {
		err := wait.PollTrue(ctx, 30*time.Second, "namespace "+ns+" to have its default ServiceAccount", func(ctx context.Context) (bool, error) {
			_, err := s.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("namespace %s has no default ServiceAccount: %v", ns, err)
		}
	}
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().Pods("doomed").Create(ctx, testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Watch in JSON for the namespace's removal.
	w, err := s.jsonCli.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=doomed"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := s.client.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	for {
		ev := nextEvent(t, w)
		if ev.Type == "DELETED" {
			break
		}
		if ns := ev.Object.(*corev1.Namespace); ns.Status.Phase != corev1.NamespaceActive && ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("phase %q", ns.Status.Phase)
		}
	}
	for _, err := range []error{
		get(s.client.CoreV1().ConfigMaps("doomed").Get(ctx, "c", metav1.GetOptions{})),
		get(s.client.CoreV1().Pods("doomed").Get(ctx, "p", metav1.GetOptions{})),
	} {
		if !apierrors.IsNotFound(err) {
			t.Fatalf("content of a deleted namespace: %v, want NotFound", err)
		}
	}
}

func get[T any](_ T, err error) error { return err }

// TestNamespaceDeletionDeletesPodsFirst: the namespace controller marks a
// terminating namespace's pods for deletion and records its deletion
// conditions, and keeps the rest (the ServiceAccount) until the pods are
// gone. (Creates into it are refused by NamespaceLifecycle admission:
// TestNamespaceLifecycleAdmission in internal/server.)
func TestNamespaceDeletionDeletesPodsFirst(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s)
	ctx := testContext(t)
	nss := s.client.CoreV1().Namespaces()
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "closing"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A new namespace gets its default ServiceAccount from the controller.
	err := wait.PollTrue(ctx, 30*time.Second, "the default ServiceAccount in a new namespace", func(ctx context.Context) (bool, error) {
		_, err := s.client.CoreV1().ServiceAccounts("closing").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no default ServiceAccount in a new namespace: %v", err)
	}
	// A bound pod keeps the namespace Terminating until its agent finishes.
	createNodes(t, s, "n1")
	if _, err := s.client.CoreV1().Pods("closing").Create(ctx, boundPod("p", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, "closing", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollTrue(ctx, 30*time.Second, "the pod in the terminating namespace to be marked for deletion, and the namespace's deletion conditions", func(ctx context.Context) (bool, error) {
		// Settled: the pod marked and the controller's conditions
		// recorded. Pods go first: the rest (the ServiceAccount) waits.
		p, err := s.client.CoreV1().Pods("closing").Get(ctx, "p", metav1.GetOptions{})
		ns, nsErr := nss.Get(ctx, "closing", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil && nsErr == nil &&
			slices.ContainsFunc(ns.Status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == corev1.NamespaceDeletionContentFailure }), nil
	})
	if err != nil {
		t.Fatalf("pod in a terminating namespace was not marked for deletion: %v", err)
	}
	if _, err := s.client.CoreV1().ServiceAccounts("closing").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the ServiceAccount of a namespace whose pod remains: %v; want it kept until the pods are gone", err)
	}
}

// denyConfigMaps allows everything except configmaps.
var denyConfigMaps = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetResource() == "configmaps" {
		return authorizer.DecisionDeny, "configmaps are off limits", nil
	}
	return authorizer.DecisionAllow, "", nil
})

func TestAuthenticationAndAuthorization(t *testing.T) {
	t.Parallel()
	s := newTestServerWith(t, func(c *Config) {
		c.Authenticator = authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
			if req.Header.Get("Authorization") != "Bearer good" {
				return nil, false, nil
			}
			return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
		})
		c.Authorizer = denyConfigMaps
	})
	call := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", s.url+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := new(strings.Builder)
		_, _ = ioCopy(buf, resp)
		return resp.StatusCode, buf.String()
	}
	if code, _ := call("/api/v1/namespaces/default/pods", ""); code != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d, want 401", code)
	}
	if code, _ := call("/api/v1/namespaces/default/pods", "good"); code != http.StatusOK {
		t.Fatalf("alice listing pods: %d, want 200", code)
	}
	code, body := call("/api/v1/namespaces/default/configmaps", "good")
	if code != http.StatusForbidden || !strings.Contains(body, `User \"alice\" cannot list resource \"configmaps\"`) {
		t.Fatalf("alice listing configmaps: %d %s, want 403 naming user, verb and resource", code, body)
	}
}
