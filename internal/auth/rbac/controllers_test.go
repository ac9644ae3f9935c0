package rbac

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"

	"github.com/berth/berth/internal/auth"
)

// TestControllerIdentitiesHoldUpstreamsRoles: the controller manager's own
// identity holds upstream's system:kube-controller-manager role in code
// (its informers list and watch everything, it holds its components'
// Leases and no other, it writes nothing else), the scheduler upstream's
// system:kube-scheduler and system:volume-scheduler, and each controller's
// service account holds what its stored system:controller: role grants.
func TestControllerIdentitiesHoldUpstreamsRoles(t *testing.T) {
	t.Parallel()
	authz, err := union.New(
		union.NamedAuthorizer{AuthorizerName: "in-code", Authorizer: auth.NewPolicyAuthorizer(ComponentBindings())},
		union.NamedAuthorizer{AuthorizerName: "rbac", Authorizer: NewAuthorizer(listersOf(t, defaultPolicyObjects()...), func() bool { return true })},
	)
	if err != nil {
		t.Fatal(err)
	}
	manager := &user.DefaultInfo{Name: auth.ControllerUser, Groups: []string{user.AllAuthenticated}}
	scheduler := &user.DefaultInfo{Name: auth.SchedulerUser, Groups: []string{user.AllAuthenticated}}
	account := func(name string) user.Info {
		sa := serviceaccount.UserInfo("kube-system", name, "")
		return &user.DefaultInfo{Name: sa.GetName(), Groups: append(sa.GetGroups(), user.AllAuthenticated)}
	}
	in := func(u user.Info, verb, group, resource, sub, namespace, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub,
			Namespace: namespace, Name: name, ResourceRequest: true}
	}
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"manager lists secrets for informers", in(manager, "list", "", "secrets", "", "", ""), true},
		{"manager watches deployments", in(manager, "watch", "apps", "deployments", "", "", ""), true},
		{"manager holds its components' leases (upstream's leader-locking Role)", in(manager, "update", "coordination.k8s.io", "leases", "", "kube-system", "berth-apps"), true},
		{"manager holds no lease elsewhere", in(manager, "update", "coordination.k8s.io", "leases", "", "default", "berth-apps"), false},
		{"manager marks no node status", in(manager, "update", "", "nodes", "status", "", "n1"), false},
		{"manager deletes no pods", in(manager, "delete", "", "pods", "", "default", "p"), false},
		{"manager cannot exec", in(manager, "create", "", "pods", "exec", "default", "p"), false},
		{"scheduler binds pods", in(scheduler, "create", "", "pods", "binding", "default", "p"), true},
		{"scheduler preempts pods", in(scheduler, "delete", "", "pods", "", "default", "p"), true},
		{"scheduler writes pod conditions", in(scheduler, "patch", "", "pods", "status", "default", "p"), true},
		{"scheduler reads storage classes (system:volume-scheduler)", in(scheduler, "list", "storage.k8s.io", "storageclasses", "", "", ""), true},
		{"scheduler holds its lease (upstream's leader-locking Role)", in(scheduler, "update", "coordination.k8s.io", "leases", "", "kube-system", "berth-scheduler"), true},
		{"scheduler holds no lease elsewhere", in(scheduler, "update", "coordination.k8s.io", "leases", "", "default", "berth-scheduler"), false},
		{"scheduler watches nodes", in(scheduler, "watch", "", "nodes", "", "", ""), true},
		{"scheduler writes events", in(scheduler, "create", "events.k8s.io", "events", "", "default", ""), true},
		{"scheduler changes no pod spec", in(scheduler, "update", "", "pods", "", "default", "p"), false},
		{"scheduler reads no secrets", in(scheduler, "get", "", "secrets", "", "default", "s"), false},
		{"scheduler creates no pods", in(scheduler, "create", "", "pods", "", "default", ""), false},
		{"node-controller marks node status", in(account("node-controller"), "update", "", "nodes", "status", "", "n1"), true},
		{"replicaset-controller creates pods", in(account("replicaset-controller"), "create", "", "pods", "", "default", ""), true},
		{"replicaset-controller reads no secrets", in(account("replicaset-controller"), "get", "", "secrets", "", "default", "s"), false},
		{"certificate-controller approves kubelet client CSRs", in(account(CertificateControllerAccount), "approve", "certificates.k8s.io", "signers", "", "", "kubernetes.io/kube-apiserver-client-kubelet"), true},
		{"certificate-controller approves kubelet serving CSRs (berth's)", in(account(CertificateControllerAccount), "approve", "certificates.k8s.io", "signers", "", "", "kubernetes.io/kubelet-serving"), true},
		{"certificate-controller approves no other client CSRs", in(account(CertificateControllerAccount), "approve", "certificates.k8s.io", "signers", "", "", "kubernetes.io/kube-apiserver-client"), false},
		{"token-cleaner deletes kube-system's secrets", in(account("token-cleaner"), "delete", "", "secrets", "", "kube-system", "bootstrap-token-abcdef"), true},
		{"token-cleaner deletes no other secrets", in(account("token-cleaner"), "delete", "", "secrets", "", "default", "s"), false},
		{"storage-version-migrator-controller rewrites any resource", in(account("storage-version-migrator-controller"), "patch", "example.com", "widgets", "", "default", "w"), true},
		{"storage-version-migrator-controller trims a CRD's stored versions", in(account("storage-version-migrator-controller"), "patch", "apiextensions.k8s.io", "customresourcedefinitions", "status", "", "widgets.example.com"), true},
		{"storage-version-migrator-controller deletes nothing", in(account("storage-version-migrator-controller"), "delete", "", "secrets", "", "default", "s"), false},
	}
	for _, tc := range cases {
		d, _, err := authz.Authorize(context.Background(), tc.attrs)
		if err != nil {
			t.Fatal(err)
		}
		if got := d == authorizer.DecisionAllow; got != tc.allow {
			t.Errorf("%s: allowed = %v, want %v (%s)", tc.name, got, tc.allow, reasonOf(authz, tc.attrs))
		}
	}
}

func reasonOf(authz authorizer.Authorizer, attrs authorizer.Attributes) string {
	_, reason, _ := authz.Authorize(context.Background(), attrs)
	return reason
}
