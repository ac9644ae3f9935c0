package node_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/wait"
)

// accessCase is one request by one identity and what must come of it.
type accessCase struct {
	name string
	as   kubernetes.Interface
	do   func(ctx context.Context) error
	want int // 0: success; otherwise the HTTP status code of the refusal
}

// TestNodeAccess runs every case against a real server and store: refused
// requests must get their code and leave the store's revision where it was.
func TestNodeAccess(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := c.client(t, pki.AdminIdentity)
	// Both nodes join with bootstrap tokens, as agents do; from then on
	// each holds only its own certificate.
	joined := c.joinNodes(t, "node-a", "node-b")
	nodeA, nodeB := joined["node-a"], joined["node-b"]
	nobody := c.client(t, pki.Identity{CommonName: "nobody", Client: true})
	viewer := c.client(t, pki.Identity{CommonName: "viewer", Client: true})
	anonymous := c.anonymous(t)
	seed(ctx, t, c, admin, nodeA, nodeB)
	bindView(ctx, t, admin, "viewer")

	pods := func(cl kubernetes.Interface) podsAPI { return podsAPI{cl.CoreV1().Pods("default")} }
	onNode := func(n string) metav1.ListOptions { return metav1.ListOptions{FieldSelector: "spec.nodeName=" + n} }
	getSecret := func(cl kubernetes.Interface, name string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := cl.CoreV1().Secrets("default").Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	getConfigMap := func(cl kubernetes.Interface, name string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := cl.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	patchNode := func(cl kubernetes.Interface, name, patch string, sub ...string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := cl.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, sub...)
			return err
		}
	}
	leases := func(cl kubernetes.Interface, ns string) leasesAPI { return leasesAPI{cl.CoordinationV1().Leases(ns)} }
	events := func(cl kubernetes.Interface, host string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := cl.CoreV1().Events("default").Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "e-"},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod-a"},
				Reason:         "Test", Message: "m", Type: corev1.EventTypeNormal,
				Source: corev1.EventSource{Component: "berth-agent", Host: host},
			}, metav1.CreateOptions{})
			return err
		}
	}
	nodeLease := corev1.NamespaceNodeLease

	cases := []accessCase{
		// What a node may not do.
		{"node-a lists all pods", nodeA, pods(nodeA).list(metav1.ListOptions{}), 403},
		{"node-a lists all pods across namespaces", nodeA, podsAPI{nodeA.CoreV1().Pods("")}.list(metav1.ListOptions{}), 403},
		{"node-a lists pods by label only", nodeA, pods(nodeA).list(metav1.ListOptions{LabelSelector: "app=web"}), 403},
		{"node-a lists node-b's pods", nodeA, pods(nodeA).list(onNode("node-b")), 403},
		{"node-a watches pods with no selector", nodeA, pods(nodeA).watch(metav1.ListOptions{}), 403},
		{"node-a watches node-b's pods", nodeA, pods(nodeA).watch(onNode("node-b")), 403},
		{"node-a watches pods not on itself", nodeA, pods(nodeA).watch(metav1.ListOptions{FieldSelector: "spec.nodeName!=node-a"}), 403},
		{"node-a gets node-b's pod", nodeA, pods(nodeA).get("pod-b"), 403},
		{"node-a gets an unbound pod", nodeA, pods(nodeA).get("pending"), 403},
		{"node-a reads a secret no pod of its uses", nodeA, getSecret(nodeA, "secret-unused"), 403},
		{"node-a reads node-b's pod's secret", nodeA, getSecret(nodeA, "secret-b"), 403},
		{"node-a reads node-b's pod's configmap", nodeA, getConfigMap(nodeA, "cm-b"), 403},
		{"node-a reads a configmap no pod of its uses", nodeA, getConfigMap(nodeA, "cm-unused"), 403},
		{"node-a reads a service account no pod of its uses", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().ServiceAccounts("default").Get(ctx, "unused", metav1.GetOptions{})
			return err
		}, 403},
		{"node-a reads a bootstrap token", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
			return err
		}, 403},
		{"node-a creates a bootstrap token", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"}, Type: "bootstrap.kubernetes.io/token",
				StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"}}, metav1.CreateOptions{})
			return err
		}, 403},
		{"node-a binds itself to cluster-admin", nodeA, func(ctx context.Context) error {
			_, err := nodeA.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:node:node-a"}}}, metav1.CreateOptions{})
			return err
		}, 403},
		{"node-a lists secrets", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
			return err
		}, 403},
		{"node-a changes its pod's secret", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Secrets("default").Patch(ctx, "secret-a", types.MergePatchType, []byte(`{"data":{"k":"eA=="}}`), metav1.PatchOptions{})
			return err
		}, 403},
		{"node-a creates a secret", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
			return err
		}, 403},
		{"node-a patches its pod's spec", nodeA, pods(nodeA).patch("pod-a", `{"spec":{"activeDeadlineSeconds":5}}`), 403},
		{"node-a relabels its pod", nodeA, pods(nodeA).patch("pod-a", `{"metadata":{"labels":{"x":"y"}}}`), 403},
		{"node-a updates node-b's pod's status", nodeA, pods(nodeA).patch("pod-b", `{"status":{"message":"hi"}}`, "status"), 403},
		{"node-a relabels its pod through its status", nodeA, pods(nodeA).patch("pod-a", `{"metadata":{"labels":{"x":"y"}}}`, "status"), 403},
		{"node-a changes its pod's annotation through its status", nodeA, pods(nodeA).patch("pod-a", `{"metadata":{"annotations":{"example.com/owner":"node-a"}}}`, "status"), 403},
		{"node-a writes a berth-private annotation through its pod's status", nodeA, pods(nodeA).patch("pod-a", `{"metadata":{"annotations":{"internal.berth.io/hint":"mine"}}}`, "status"), 403},
		{"node-a drops its pod's annotations through its status", nodeA, pods(nodeA).patch("pod-a", `{"metadata":{"annotations":null}}`, "status"), 403},
		{"node-a rewrites its pod's resource claim statuses", nodeA, pods(nodeA).patch("pod-a", `{"status":{"resourceClaimStatuses":[{"name":"gpu","resourceClaimName":"someone-elses"}]}}`, "status"), 403},
		{"node-a creates a pod", nodeA, pods(nodeA).create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}), 403},
		{"node-a creates a mirror pod on itself", nodeA, pods(nodeA).create(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "mirror", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}},
			Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}), 403},
		{"node-a binds a pending pod to itself", nodeA, func(ctx context.Context) error {
			return nodeA.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "pending"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}, metav1.CreateOptions{})
		}, 403},
		{"node-a evicts its pod", nodeA, func(ctx context.Context) error {
			return nodeA.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "pod-a"}})
		}, 403},
		{"node-a deletes node-b's pod", nodeA, pods(nodeA).delete("pod-b"), 403},
		{"node-a deletes its running pod", nodeA, pods(nodeA).delete("pod-a"), 403},
		{"node-a deletes pods by collection", nodeA, func(ctx context.Context) error {
			return nodeA.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{}, onNode("node-a"))
		}, 403},
		{"node-a reads its pod's log", nodeA, func(ctx context.Context) error {
			return nodeA.CoreV1().Pods("default").GetLogs("pod-a", &corev1.PodLogOptions{}).Do(ctx).Error()
		}, 403},
		{"node-a execs into its pod", nodeA, func(ctx context.Context) error {
			return nodeA.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("pod-a").SubResource("exec").Param("command", "id").Do(ctx).Error()
		}, 403},
		{"node-a updates node-b's status", nodeA, patchNode(nodeA, "node-b", `{"status":{"phase":"Running"}}`, "status"), 403},
		{"node-a relabels node-b", nodeA, patchNode(nodeA, "node-b", `{"metadata":{"labels":{"x":"y"}}}`), 403},
		{"node-a deletes node-b", nodeA, func(ctx context.Context) error {
			return nodeA.CoreV1().Nodes().Delete(ctx, "node-b", metav1.DeleteOptions{})
		}, 403},
		{"node-a deletes itself", nodeA, func(ctx context.Context) error {
			return nodeA.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{})
		}, 403},
		{"node-a gets node-b (every node reads all Nodes, for routes)", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
			return err
		}, 0},
		{"node-a lists nodes", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}, 0},
		{"node-a registers node-c", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}, metav1.CreateOptions{})
			return err
		}, 403},
		{"node-a sets a node-restriction label on itself", nodeA, patchNode(nodeA, "node-a", `{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"gold"}}}`), 403},
		{"node-a gives itself a control-plane role label", nodeA, patchNode(nodeA, "node-a", `{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`), 403},
		{"node-a removes the admin's taint from itself", nodeA, patchNode(nodeA, "node-a", `{"spec":{"taints":null}}`), 403},
		{"node-a uncordons itself", nodeA, patchNode(nodeA, "node-a", `{"spec":{"unschedulable":false}}`), 403},
		{"node-a renews node-b's lease", nodeA, leases(nodeA, nodeLease).patch("node-b", `{"spec":{"holderIdentity":"node-a"}}`), 403},
		{"node-a creates node-c's lease", nodeA, leases(nodeA, nodeLease).create("node-c"), 403},
		{"node-a creates a lease elsewhere", nodeA, leases(nodeA, "default").create("node-a"), 403},
		{"node-a deletes its lease", nodeA, leases(nodeA, nodeLease).delete("node-a"), 403},
		{"node-a reports an event as node-b", nodeA, events(nodeA, "node-b"), 403},
		{"node-a lists events", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			return err
		}, 403},
		{"node-a approves its CSR", nodeA, func(ctx context.Context) error {
			csr, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr-a", metav1.GetOptions{})
			if err != nil {
				return err
			}
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Self"})
			_, err = nodeA.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "csr-a", csr, metav1.UpdateOptions{})
			return err
		}, 403},
		{"node-a gets node-b's CSR", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr-b", metav1.GetOptions{})
			return err
		}, 403},
		{"node-a lists CSRs", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			return err
		}, 403},
		{"node-a creates a namespace", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
			return err
		}, 403},
		{"node-b gets node-a's pod", nodeB, pods(nodeB).get("pod-a"), 403},
		{"node-b reads node-a's pod's secret", nodeB, getSecret(nodeB, "secret-a"), 403},
		// Users who are not nodes.
		{"a user with no rights lists pods", nobody, pods(nobody).list(metav1.ListOptions{}), 403},
		{"a user with no rights lists pods on node-a", nobody, pods(nobody).list(onNode("node-a")), 403},
		{"a user with no rights reads a pod's secret", nobody, getSecret(nobody, "secret-a"), 403},
		{"a user named like a node but outside system:nodes", c.client(t, pki.Identity{CommonName: "system:node:node-a", Client: true}), pods(nobody).list(onNode("node-a")), 403},
		{"a view-only user reads a secret", viewer, getSecret(viewer, "secret-a"), 403},
		{"a view-only user patches a pod", viewer, pods(viewer).patch("pod-a", `{"metadata":{"labels":{"x":"y"}}}`), 403},
		{"a view-only user deletes a pod", viewer, pods(viewer).delete("pod-b"), 403},
		{"a view-only user creates a pod", viewer, pods(viewer).create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}), 403},
		{"a view-only user execs into a pod", viewer, func(ctx context.Context) error {
			return viewer.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("pod-a").SubResource("exec").Param("command", "id").Do(ctx).Error()
		}, 403},
		{"a view-only user grants itself edit", viewer, func(ctx context.Context) error {
			_, err := viewer.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}}}, metav1.CreateOptions{})
			return err
		}, 403},
		{"a view-only user lists nodes (view covers namespaced objects only, as upstream)", viewer, func(ctx context.Context) error {
			_, err := viewer.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}, 403},
		{"a view-only user updates a node's status", viewer, patchNode(viewer, "node-a", `{"status":{"phase":"Running"}}`, "status"), 403},
		{"an anonymous client lists pods", anonymous, pods(anonymous).list(metav1.ListOptions{}), 401},
		{"an anonymous client reads a secret", anonymous, getSecret(anonymous, "secret-a"), 401},

		// What a node may do.
		{"node-a lists its own pods", nodeA, pods(nodeA).listExactly(onNode("node-a"), "pod-a", "pod-a-done"), 0},
		{"node-a lists its own pods in one namespace", nodeA, pods(nodeA).listExactly(onNode("node-a"), "pod-a", "pod-a-done"), 0},
		{"node-a watches its own pods", nodeA, pods(nodeA).watch(onNode("node-a")), 0},
		{"node-a gets its pod", nodeA, pods(nodeA).get("pod-a"), 0},
		{"node-a reads its pod's secret", nodeA, getSecret(nodeA, "secret-a"), 0},
		{"node-a reads its pod's configmap", nodeA, getConfigMap(nodeA, "cm-a"), 0},
		{"node-a reads its pod's service account", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err
		}, 0},
		{"node-a updates its pod's status", nodeA, pods(nodeA).patch("pod-a", `{"status":{"message":"running"}}`, "status"), 0},
		{"node-a's ownerReferences through its pod's status are ignored", nodeA, func(ctx context.Context) error {
			if err := pods(nodeA).patch("pod-a", `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"node-a","uid":"u"}]},"status":{"message":"owned?"}}`, "status")(ctx); err != nil {
				return err
			}
			p, err := admin.CoreV1().Pods("default").Get(ctx, "pod-a", metav1.GetOptions{})
			if err == nil && len(p.OwnerReferences) != 0 {
				err = fmt.Errorf("the status update set ownerReferences %v", p.OwnerReferences)
			}
			return err
		}, 0},
		{"node-a updates its own status", nodeA, patchNode(nodeA, "node-a", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"AgentReady"}]}}`, "status"), 0},
		{"node-a sets a label of its own domain", nodeA, patchNode(nodeA, "node-a", `{"metadata":{"labels":{"example.com/rack":"r1"}}}`), 0},
		{"node-a gets itself", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
			return err
		}, 0},
		{"node-a renews its own lease", nodeA, leases(nodeA, nodeLease).patch("node-a", `{"spec":{"renewTime":"2026-01-01T00:00:00.000000Z"}}`), 0},
		{"node-a reports an event as itself", nodeA, events(nodeA, "node-a"), 0},
		{"node-a gets its own CSR", nodeA, func(ctx context.Context) error {
			_, err := nodeA.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr-a", metav1.GetOptions{})
			return err
		}, 0},
		{"node-a deletes its terminating pod", nodeA, pods(nodeA).delete("pod-a-done"), 0},
		{"node-b reads its pod's secret", nodeB, getSecret(nodeB, "secret-b"), 0},
		{"the admin lists all pods", admin, pods(admin).list(metav1.ListOptions{}), 0},
		{"a view-only user lists node-b's pods", viewer, pods(viewer).listExactly(onNode("node-b"), "pod-b"), 0},
		{"a view-only user watches pods across nodes", viewer, podsAPI{viewer.CoreV1().Pods("")}.watch(metav1.ListOptions{}), 0},

		// What a node sees of its pods: no managedFields, no private annotations.
		{"node-a gets its pod in the node's view", nodeA, pods(nodeA).getView("pod-a", false), 0},
		{"node-a lists its pods in the node's view", nodeA, pods(nodeA).listView(onNode("node-a"), false), 0},
		{"node-a watches its pods in the node's view", nodeA, pods(nodeA).watchView(onNode("node-a"), false), 0},
		{"the admin gets the pod as stored", admin, pods(admin).getView("pod-a", true), 0},
		{"the admin watches the pods as stored", admin, pods(admin).watchView(onNode("node-a"), true), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := c.revision(t)
			err := tc.do(ctx)
			switch {
			case tc.want == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == 0:
				return
			case err == nil:
				t.Fatalf("allowed, want %d", tc.want)
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || int(status.Status().Code) != tc.want {
				t.Fatalf("err = %v, want %d", err, tc.want)
			}
			if after := c.revision(t); after != before {
				t.Fatalf("store revision moved %d -> %d: a refused request wrote", before, after)
			}
		})
	}
}

// TestNodeRefusalNamesWhoWhatAndWhy checks the 403 body a node gets.
func TestNodeRefusalNamesWhoWhatAndWhy(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.client(t, pki.NodeIdentity("node-a")).CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want 403", err)
	}
	for _, want := range []string{`User "system:node:node-a" cannot list resource "pods"`, "fieldSelector spec.nodeName=node-a"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err.Error(), want)
		}
	}
}

// seed creates the objects the cases act on; the nodes register themselves
// and their pods reference secret-X and cm-X.
func seed(ctx context.Context, t *testing.T, c *cluster, admin, nodeA, nodeB kubernetes.Interface) {
	t.Helper()
	register(ctx, t, nodeA, "node-a")
	register(ctx, t, nodeB, "node-b")
	for _, name := range []string{"a", "b", "unused"} {
		if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-" + name}, StringData: map[string]string{"k": name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + name}, Data: map[string]string{"k": name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "unused"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pending := podUsing("pending", "", "secret-unused", "cm-unused")
	pending.Labels = map[string]string{"app": "web"}
	for _, p := range []*corev1.Pod{podUsing("pod-a", "node-a", "secret-a", "cm-a"), podUsing("pod-a-done", "node-a", "secret-a", "cm-a"), podUsing("pod-b", "node-b", "secret-b", "cm-b"), pending} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	// Once its pods are bound, the admin cordons node-a and taints it: the node may not undo either.
	if _, err := admin.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, []byte(`{"spec":{"unschedulable":true,"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	grace := int64(600)
	if err := admin.CoreV1().Pods("default").Delete(ctx, "pod-a-done", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		client kubernetes.Interface
		name   string
	}{{nodeA, "node-a"}, {nodeB, "node-b"}} {
		ownLease := leasesAPI{n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)}
		if err := ownLease.create(n.name)(ctx); err != nil {
			t.Fatalf("%s creates its lease: %v", n.name, err)
		}
		if _, err := n.client.CertificatesV1().CertificateSigningRequests().Create(ctx, csrFor(t, "csr-"+strings.TrimPrefix(n.name, "node-"), n.name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s requests a certificate: %v", n.name, err)
		}
	}
	wait.Until(t, time.Minute, "the graph to see the seeded pods and CSRs", func() bool {
		return c.graph.Synced() && c.graph.PodBoundTo("default", "pod-a", "node-a") && c.graph.PodBoundTo("default", "pod-b", "node-b") &&
			c.graph.CSRRequestedBy("csr-a", "system:node:node-a") && c.graph.CSRRequestedBy("csr-b", "system:node:node-b")
	})
	if p, err := admin.CoreV1().Pods("default").Get(ctx, "pod-a-done", metav1.GetOptions{}); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("pod-a-done should be terminating: %v, %v", p, err)
	}
}

// bindView gives user the default view ClusterRole across the cluster and
// waits until the authorizer knows it.
func bindView(ctx context.Context, t *testing.T, admin kubernetes.Interface, user string) {
	t.Helper()
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, user+"'s view binding to take effect", func() bool {
		review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}}}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed
	})
}

// podsAPI builds pod requests as functions of a context.
type podsAPI struct{ pods typedcorev1.PodInterface }

func (p podsAPI) list(opts metav1.ListOptions) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := p.pods.List(ctx, opts)
		return err
	}
}

// listExactly lists and checks that exactly the named pods came back.
func (p podsAPI) listExactly(opts metav1.ListOptions, names ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		list, err := p.pods.List(ctx, opts)
		if err != nil {
			return err
		}
		var got []string
		for _, pod := range list.Items {
			got = append(got, pod.Name)
		}
		if !slices.Equal(got, names) {
			return fmt.Errorf("listed %v, want %v", got, names)
		}
		return nil
	}
}

// watch opens a watch and waits for its first event, so a refusal that
// arrives only as an error event is seen too.
func (p podsAPI) watch(opts metav1.ListOptions) func(context.Context) error {
	return func(ctx context.Context) error {
		w, err := p.pods.Watch(ctx, opts)
		if err != nil {
			return err
		}
		defer w.Stop()
		ev, ok := <-w.ResultChan()
		if !ok {
			return errors.New("watch closed before its first event")
		}
		if ev.Type == watch.Error {
			return apierrors.FromObject(ev.Object)
		}
		return nil
	}
}

func (p podsAPI) getView(name string, asStored bool) func(context.Context) error {
	return func(ctx context.Context) error {
		pod, err := p.pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return nodeView(pod, asStored)
	}
}

func (p podsAPI) listView(opts metav1.ListOptions, asStored bool) func(context.Context) error {
	return func(ctx context.Context) error {
		list, err := p.pods.List(ctx, opts)
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return errors.New("listed no pods")
		}
		for i := range list.Items {
			if err := nodeView(&list.Items[i], asStored); err != nil {
				return err
			}
		}
		return nil
	}
}

// watchView checks the first event's pod, then one sent after an update.
func (p podsAPI) watchView(opts metav1.ListOptions, asStored bool) func(context.Context) error {
	return func(ctx context.Context) error {
		w, err := p.pods.Watch(ctx, opts)
		if err != nil {
			return err
		}
		defer w.Stop()
		ev, ok := <-w.ResultChan()
		if !ok {
			return errors.New("watch closed before its first event")
		}
		pod, isPod := ev.Object.(*corev1.Pod)
		if !isPod {
			return fmt.Errorf("first event %s carries %T", ev.Type, ev.Object)
		}
		return nodeView(pod, asStored)
	}
}

func (p podsAPI) get(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := p.pods.Get(ctx, name, metav1.GetOptions{})
		return err
	}
}

func (p podsAPI) create(pod *corev1.Pod) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := p.pods.Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
}

func (p podsAPI) patch(name, patch string, sub ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := p.pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, sub...)
		return err
	}
}

func (p podsAPI) delete(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		return p.pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}
}

// leasesAPI builds lease requests as functions of a context.
type leasesAPI struct {
	leases typedcoordinationv1.LeaseInterface
}

func (l leasesAPI) create(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := l.leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &name}}, metav1.CreateOptions{})
		return err
	}
}

func (l leasesAPI) patch(name, patch string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := l.leases.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
}

func (l leasesAPI) delete(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		return l.leases.Delete(ctx, name, metav1.DeleteOptions{})
	}
}
