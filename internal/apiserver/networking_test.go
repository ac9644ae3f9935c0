package apiserver

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestNetworkingKindsAsKubeAPIServer serves networking.k8s.io/v1 as
// kube-apiserver does: each kind at its key, validated by upstream's
// strategy with its field paths; an Ingress's status written only through
// its status subresource; IPAddresses named by a canonical address;
// ServiceCIDRs immutable once created; printed with kubectl's columns.
func TestNetworkingKindsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	net := s.client.NetworkingV1()

	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "web"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
			}}}}}}},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}}},
	}
	created, err := net.Ingresses("web").Create(ctx, ing, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ingress: %v", err)
	}
	if len(created.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("create kept the status %+v; upstream's strategy clears it", created.Status)
	}
	if kv, err := s.store.Get(ctx, "/registry/ingress/web/site"); err != nil || len(kv.Value) == 0 {
		t.Fatalf("kube-apiserver's key /registry/ingress/web/site: %q, %v", kv.Value, err)
	}
	created.Status = ing.Status
	withStatus, err := net.Ingresses("web").UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil || len(withStatus.Status.LoadBalancer.Ingress) != 1 {
		t.Fatalf("update status: %v, %+v", err, withStatus)
	}
	bad := ing.DeepCopy()
	bad.Name = "bad"
	bad.Spec.Rules[0].HTTP.Paths[0].PathType = nil
	bad.Spec.Rules[0].Host = "*.*.example.com"
	_, err = net.Ingresses("web").Create(ctx, bad, metav1.CreateOptions{})
	expectInvalidFields(t, "ingress without a pathType and a bad wildcard host", err,
		"spec.rules[0].host", "spec.rules[0].http.paths[0].pathType")

	cols, rows := tableOf(t, s, "/apis/networking.k8s.io/v1/namespaces/web/ingresses/site")
	if cols != "Name Class Hosts Address Ports Age" || len(rows) != 1 || rows[0].Cells[2] != "example.com" || rows[0].Cells[3] != "192.0.2.1" {
		t.Fatalf("ingress table columns %q rows %+v, want upstream's", cols, rows)
	}

	_, err = net.IPAddresses().Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "192.0.2.010"},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "web", Name: "web"}}}, metav1.CreateOptions{})
	expectInvalidFields(t, "an IPAddress not named canonically", err, "metadata.name")
	ip, err := net.IPAddresses().Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "2001:db8::1"},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "web", Name: "web"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create IPAddress: %v", err)
	}
	if _, err := net.IPAddresses().Patch(ctx, ip.Name, types.MergePatchType, []byte(`{"spec":{"parentRef":{"name":"other"}}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing an IPAddress's parentRef: %v, want Invalid (immutable)", err)
	}

	cidr, err := net.ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/16"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ServiceCIDR: %v", err)
	}
	cidr.Spec.CIDRs = []string{"10.201.0.0/16"}
	if _, err := net.ServiceCIDRs().Update(ctx, cidr, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.cidrs") {
		t.Errorf("changing a ServiceCIDR's cidrs: %v, want Invalid on spec.cidrs", err)
	}

	if _, err := net.NetworkPolicies("web").Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Sideways"}}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a NetworkPolicy with an unknown policy type: %v, want Invalid", err)
	}
	np, err := net.NetworkPolicies("web").Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny"}}, metav1.CreateOptions{})
	if err != nil || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Fatalf("create NetworkPolicy: %v, policyTypes %v, want upstream's default [Ingress]", err, np)
	}
}

// expectInvalidFields checks err is a 422 with a cause on each want field path.
func expectInvalidFields(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		t.Errorf("%s: %v, want Invalid", what, err)
		return
	}
	for _, field := range want {
		if !hasCause(status.Status(), field) {
			t.Errorf("%s: no cause on %s in %+v", what, field, status.Status().Details)
		}
	}
}
