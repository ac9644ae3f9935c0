package rbac_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/wait"
)

// `kubectl auth can-i --list` lists what the user holds (SelfSubjectRulesReview):
// a view-only user's reads, not writes; and a ClusterRole labelled
// aggregate-to-view extends view, so the same user gains it, which the list
// then shows too (aggregation controller under berth server).
func TestViewAggregationAndCanIList(t *testing.T) {
	t.Parallel()
	b := startBerth(t)
	admin := filepath.Join(b.dataDir, "admin.kubeconfig")
	viewerID := pki.Identity{CommonName: "viewer", Client: true}
	viewer := b.kubeconfigFor(viewerID)
	b.mustAs(admin, "create", "clusterrolebinding", "viewer-view", "--clusterrole=view", "--user=viewer")

	wait.Until(t, 2*time.Minute, "the viewer to list pods", func() bool {
		out, _ := b.as(viewer, "auth", "can-i", "list", "pods")
		return lastLine(out) == "yes"
	})
	list := b.mustAs(viewer, "auth", "can-i", "--list")
	if !hasRuleLine(list, "pods", "[get list watch]") || hasRuleLine(list, "secrets", "") {
		t.Fatalf("can-i --list as a view-only user: want pods read and no secrets:\n%s", list)
	}
	if hasRuleLine(list, "leases.coordination.k8s.io", "") {
		t.Fatalf("view reads leases before any role extends it:\n%s", list)
	}
	b.forbiddenAs(viewer, "get", "leases", "-n", "kube-node-lease")

	b.mustAs(admin, "create", "clusterrole", "lease-reader", "--verb=get,list,watch", "--resource=leases.coordination.k8s.io")
	b.mustAs(admin, "label", "clusterrole", "lease-reader", "rbac.authorization.k8s.io/aggregate-to-view=true")
	wait.Until(t, 2*time.Minute, "view, and so the viewer, to read leases", func() bool {
		_, ok := b.as(viewer, "get", "leases", "-n", "kube-node-lease")
		return ok
	})
	for _, role := range []string{"view", "edit", "admin"} {
		out := b.mustAs(admin, "get", "clusterrole", role, "-o", "jsonpath={.rules[*].resources}")
		if !strings.Contains(out, "leases") {
			t.Errorf("ClusterRole %s lacks the aggregated leases rule: %s", role, out)
		}
	}
	if list := b.mustAs(viewer, "auth", "can-i", "--list"); !hasRuleLine(list, "leases.coordination.k8s.io", "[get list watch]") {
		t.Errorf("can-i --list after the aggregation lacks leases:\n%s", list)
	}
	b.forbiddenAs(viewer, "delete", "lease", "node-x", "-n", "kube-node-lease")

	// The admin (system:masters) holds everything; a node's list is incomplete.
	if list := b.mustAs(admin, "auth", "can-i", "--list"); !hasRuleLine(list, "*.*", "[*]") {
		t.Errorf("can-i --list as the admin:\n%s", list)
	}
	node := b.kubeconfigFor(pki.NodeIdentity("node-x"))
	if out, _ := b.as(node, "auth", "can-i", "--list"); !strings.Contains(out, "incomplete") {
		t.Errorf("can-i --list as a node does not say it is incomplete:\n%s", out)
	}
}

// hasRuleLine reports whether kubectl's can-i --list table has a line for
// resource whose verbs column is verbs ("" matches any).
func hasRuleLine(table, resource, verbs string) bool {
	for _, line := range strings.Split(table, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != resource {
			continue
		}
		if verbs == "" || strings.HasSuffix(strings.TrimSpace(line), verbs) {
			return true
		}
	}
	return false
}
