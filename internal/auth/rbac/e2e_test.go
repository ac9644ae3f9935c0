package rbac_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/auth/rbac"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/kubectltest"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/wait"
)

func TestMain(m *testing.M) {
	kubectltest.RunIfChild()
	os.Exit(m.Run())
}

// berth is a real `berth server` (in-process, no local agent) and kubectl
// runs against it with the kubeconfig of one user or another.
type berth struct {
	t       *testing.T
	dataDir string
	url     string
	kubectl *kubectltest.Runner
	admin   kubernetes.Interface
	// stop ends the server and waits for it (also done at cleanup).
	stop func()
}

func startBerth(t *testing.T) *berth {
	t.Helper()
	return startBerthIn(t, t.TempDir())
}

func startBerthIn(t *testing.T, dataDir string) *berth {
	t.Helper()
	port := ports.Free(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: dataDir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true,
			AuditLogPath: filepath.Join(dataDir, "audit.log"),
			Logger:       slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("server: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	b := &berth{t: t, dataDir: dataDir, url: "https://127.0.0.1:" + strconv.Itoa(port), stop: stop}
	b.kubectl = kubectltest.New(t, b.url)
	adminKubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	// The kubeconfig is read again on each try: after a restart on another
	// port the server rewrites it.
	wait.Until(t, 2*time.Minute, "the admin kubeconfig and the default roles", func() bool {
		cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
		if err != nil {
			return false
		}
		b.admin = kubernetes.NewForConfigOrDie(cfg)
		return defaultsInPlace(b.admin)
	})
	return b
}

// defaultsInPlace reports whether every default role and binding exists
// (labelled as the server's), so tests start from the whole policy.
func defaultsInPlace(c kubernetes.Interface) bool {
	ctx := context.Background()
	p := rbac.DefaultPolicy()
	for _, r := range p.ClusterRoles {
		got, err := c.RbacV1().ClusterRoles().Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil || got.Labels[rbac.BootstrappingLabel] != rbac.BootstrappingValue {
			return false
		}
	}
	for _, b := range p.ClusterRoleBindings {
		if _, err := c.RbacV1().ClusterRoleBindings().Get(ctx, b.Name, metav1.GetOptions{}); err != nil {
			return false
		}
	}
	return true
}

// kubeconfigFor writes a kubeconfig with a client certificate for id.
func (b *berth) kubeconfigFor(id pki.Identity) string {
	b.t.Helper()
	cluster, err := pki.LoadOrCreateCluster(filepath.Join(b.dataDir, "pki"), pki.DefaultServingNames([]string{"127.0.0.1"}))
	if err != nil {
		b.t.Fatal(err)
	}
	kc, err := cluster.ClientKubeconfig(b.url, id)
	if err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(b.t.TempDir(), id.CommonName+".kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// as runs kubectl with kubeconfig (the runner's own flag comes first, and
// kubectl takes the last one given).
func (b *berth) as(kubeconfig string, args ...string) (string, bool) {
	b.t.Helper()
	return b.kubectl.Run("", nil, append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

func (b *berth) mustAs(kubeconfig string, args ...string) string {
	b.t.Helper()
	out, ok := b.as(kubeconfig, args...)
	if !ok {
		b.t.Fatalf("kubectl %s: %s", strings.Join(args, " "), out)
	}
	return out
}

func (b *berth) forbiddenAs(kubeconfig string, args ...string) string {
	b.t.Helper()
	out, ok := b.as(kubeconfig, args...)
	if ok || !strings.Contains(out, "forbidden") {
		b.t.Fatalf("kubectl %s: want forbidden, got (ok=%v): %s", strings.Join(args, " "), ok, out)
	}
	return out
}

// An operator grants a monitoring user read-only watch of pods across
// nodes and namespaces with kubectl; the grant is exactly that, cannot be
// widened by the user, and goes away with its binding.
func TestOperatorGrantsMonitoringReadOnlyPods(t *testing.T) {
	t.Parallel()
	b := startBerth(t)
	ctx := context.Background()
	admin := filepath.Join(b.dataDir, "admin.kubeconfig")
	monitorID := pki.Identity{CommonName: "monitor", Client: true}
	monitor := b.kubeconfigFor(monitorID)

	for _, ns := range []string{"team-a", "team-b"} {
		b.mustAs(admin, "create", "namespace", ns)
		b.mustAs(admin, "-n", ns, "run", "web-"+ns, "--image=busybox", "--restart=Never")
	}
	b.mustAs(admin, "-n", "team-a", "create", "secret", "generic", "db", "--from-literal=password=hunter2")

	// Before any grant: authenticated, but nothing beyond discovery.
	b.forbiddenAs(monitor, "get", "pods", "-A")
	if out, _ := b.as(monitor, "auth", "can-i", "list", "pods", "-A"); lastLine(out) != "no" {
		t.Fatalf("can-i list pods before the grant: %q", out)
	}

	b.mustAs(admin, "create", "clusterrole", "pod-watcher", "--verb=get,list,watch", "--resource=pods")
	b.mustAs(admin, "create", "clusterrolebinding", "monitoring", "--clusterrole=pod-watcher", "--user=monitor")
	if out := b.mustAs(admin, "get", "clusterrolebinding", "monitoring", "-o", "wide"); !strings.Contains(out, "ClusterRole/pod-watcher") || !strings.Contains(out, "monitor") {
		t.Errorf("kubectl get clusterrolebinding -o wide:\n%s", out)
	}

	wait.Until(t, 2*time.Minute, "the monitor to list pods in every namespace", func() bool {
		out, ok := b.as(monitor, "get", "pods", "-A", "-o", "name")
		return ok && strings.Contains(out, "pod/web-team-a") && strings.Contains(out, "pod/web-team-b")
	})
	for verb, want := range map[string]string{"list": "yes", "watch": "yes", "get": "yes", "create": "no", "delete": "no"} {
		if out, _ := b.as(monitor, "auth", "can-i", verb, "pods", "-A"); lastLine(out) != want {
			t.Errorf("can-i %s pods -A = %q, want %s", verb, out, want)
		}
	}
	watchPodsAcrossNamespaces(t, b.clientFor(monitorID))

	b.forbiddenAs(monitor, "-n", "team-a", "get", "secrets")
	b.forbiddenAs(monitor, "-n", "team-a", "get", "secret", "db")
	b.forbiddenAs(monitor, "-n", "team-a", "run", "intruder", "--image=busybox", "--restart=Never")
	b.forbiddenAs(monitor, "-n", "team-b", "delete", "pod", "web-team-b")
	b.forbiddenAs(monitor, "-n", "team-a", "delete", "secret", "db")
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := b.admin.CoreV1().Pods(ns).Get(ctx, "web-"+ns, metav1.GetOptions{}); err != nil {
			t.Errorf("pod in %s after the monitor's refused delete: %v", ns, err)
		}
	}
	if _, err := b.admin.CoreV1().Pods("team-a").Get(ctx, "intruder", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused create left a pod: %v", err)
	}

	// Escalation: even allowed to write RBAC objects, the monitor cannot
	// grant what it does not hold.
	b.mustAs(admin, "create", "clusterrole", "rbac-writer", "--verb=create,update", "--resource=clusterroles,clusterrolebindings,roles,rolebindings")
	b.mustAs(admin, "create", "clusterrolebinding", "monitor-writes-rbac", "--clusterrole=rbac-writer", "--user=monitor")
	wait.UntilNil(t, 2*time.Minute, "the monitor to be allowed to create clusterroles", func() error {
		if canI, _ := b.as(monitor, "auth", "can-i", "create", "clusterroles"); lastLine(canI) != "yes" {
			return fmt.Errorf("kubectl auth can-i: %s", canI)
		}
		return nil
	})
	out := b.forbiddenAs(monitor, "create", "clusterrole", "secret-reader", "--verb=get", "--resource=secrets")
	if !strings.Contains(out, "not currently held") {
		t.Errorf("escalating role refused without saying why: %s", out)
	}
	b.forbiddenAs(monitor, "create", "clusterrolebinding", "monitor-is-admin", "--clusterrole=cluster-admin", "--user=monitor")
	b.forbiddenAs(monitor, "-n", "team-a", "create", "rolebinding", "monitor-edits", "--clusterrole=edit", "--user=monitor")
	for _, name := range []string{"secret-reader"} {
		if _, err := b.admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("refused clusterrole %s exists: %v", name, err)
		}
	}
	if _, err := b.admin.RbacV1().ClusterRoleBindings().Get(ctx, "monitor-is-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused binding exists: %v", err)
	}
	// Within what it holds, it may.
	b.mustAs(monitor, "create", "clusterrole", "pod-lister", "--verb=list", "--resource=pods")
	// An aggregationRule gathers other roles' rules, so a ClusterRole with
	// no rules that selects admin's labels, bound to the monitor, would hand
	// it admin once the aggregation controller filled it in.
	out = b.forbiddenAs(monitor, "create", "clusterrole", "sneaky", "--aggregation-rule=rbac.authorization.k8s.io/aggregate-to-admin=true")
	if !strings.Contains(out, `clusterroles.rbac.authorization.k8s.io "sneaky" is forbidden: must have cluster-admin privileges to use the aggregationRule`) {
		t.Errorf("aggregating role refused without upstream's reason: %s", out)
	}
	if _, err := b.admin.RbacV1().ClusterRoles().Get(ctx, "sneaky", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused aggregating clusterrole exists: %v", err)
	}

	// Revocation: deleting the binding takes the access away.
	b.mustAs(admin, "delete", "clusterrolebinding", "monitoring")
	wait.Until(t, 2*time.Minute, "the monitor to lose pod access", func() bool {
		out, ok := b.as(monitor, "get", "pods", "-A")
		return !ok && strings.Contains(out, "forbidden")
	})

	// The audit log (--audit-log-path) has the grant, the refused
	// escalation and the revocation, each with who, what and the outcome.
	log := readAuditLog(t, filepath.Join(b.dataDir, "audit.log"))
	for _, want := range []string{
		"berth-admin create clusterrolebindings monitoring 201",
		"monitor create clusterroles secret-reader 403",
		"monitor get secrets db 403",
		"berth-admin delete clusterrolebindings monitoring 200",
	} {
		if !log[want] {
			t.Errorf("audit log lacks %q", want)
		}
	}
}

// readAuditLog returns "user verb resource name code" of each event.
func readAuditLog(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev auditv1.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line is not JSON: %v: %s", err, line)
		}
		if ev.ObjectRef == nil || ev.ResponseStatus == nil {
			continue
		}
		seen[fmt.Sprintf("%s %s %s %s %d", ev.User.Username, ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.ResponseStatus.Code)] = true
	}
	return seen
}

// A pod's service account gets a token bound to the pod (kubectl create
// token), is authorized by RBAC through a ServiceAccount subject, and the
// token stops working when the pod is deleted.
func TestServiceAccountTokenBoundToPod(t *testing.T) {
	t.Parallel()
	b := startBerth(t)
	admin := filepath.Join(b.dataDir, "admin.kubeconfig")
	b.mustAs(admin, "create", "serviceaccount", "robot")
	b.mustAs(admin, "run", "web", "--image=busybox", "--restart=Never", `--overrides={"spec":{"serviceAccountName":"robot"}}`)
	token := strings.TrimSpace(b.mustAs(admin, "create", "token", "robot", "--bound-object-kind=Pod", "--bound-object-name=web", "--duration=1h"))
	withToken := func(args ...string) (string, bool) {
		return b.kubectl.Run("", nil, append([]string{"--certificate-authority", filepath.Join(b.dataDir, "server-ca.crt"), "--token", token}, args...)...)
	}

	out, ok := withToken("get", "pods")
	if ok || !strings.Contains(out, `User "system:serviceaccount:default:robot" cannot list resource "pods"`) {
		t.Fatalf("the token before any grant: ok=%v %s; want 403 naming the service account", ok, out)
	}
	b.mustAs(admin, "create", "rolebinding", "robot-views", "--clusterrole=view", "--serviceaccount=default:robot")
	wait.UntilNil(t, 2*time.Minute, "the service account to list pods", func() error {
		if out, ok := withToken("get", "pods", "-o", "name"); !ok || !strings.Contains(out, "pod/web") {
			return fmt.Errorf("kubectl get pods (ok=%v): %s", ok, out)
		}
		return nil
	})
	if out, ok := withToken("get", "secrets"); ok || !strings.Contains(out, "forbidden") {
		t.Errorf("view lets the service account read secrets: %s", out)
	}
	if out, ok := withToken("-n", "kube-system", "get", "pods"); ok || !strings.Contains(out, "forbidden") {
		t.Errorf("a rolebinding in default grants kube-system: %s", out)
	}

	b.mustAs(admin, "delete", "pod", "web", "--grace-period=0", "--force")
	wait.UntilNil(t, 2*time.Minute, "the token to die with its pod", func() error {
		if out, ok := withToken("get", "pods"); ok || !strings.Contains(out, "Unauthorized") {
			return fmt.Errorf("kubectl get pods (ok=%v): %s", ok, out)
		}
		return nil
	})
}

// TestDefaultRolesAreReconciledAsUpstream restarts the server on an
// operator's changes to the default policy: as kube-apiserver's
// rbac/bootstrap-roles hook, it gives a default role back the rules it
// lost but keeps the ones the operator added, leaves a role annotated
// autoupdate=false exactly as it is, and creates a deleted default binding
// again.
func TestDefaultRolesAreReconciledAsUpstream(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	b := startBerthIn(t, dataDir)
	ctx := context.Background()
	getPods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	getWidgets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	listConfigMaps := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	change := func(name string, rules []rbacv1.PolicyRule, annotations map[string]string) {
		role, err := b.admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		role.Rules, role.Annotations = rules, annotations
		if _, err := b.admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// view and edit are aggregated, as upstream's: the operator changes
	// their sources.
	change("system:aggregate-to-view", []rbacv1.PolicyRule{getPods, getWidgets}, nil)
	change("system:aggregate-to-edit", []rbacv1.PolicyRule{getPods}, map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "false"})
	if err := b.admin.RbacV1().ClusterRoleBindings().Delete(ctx, "system:public-info-viewer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesOf := func(role string) []rbacv1.PolicyRule {
		r, err := b.admin.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return r.Rules
	}
	wait.Until(t, 2*time.Minute, "view to follow its changed source", func() bool {
		return len(rulesOf("view")) == 2 && !covers(rulesOf("view"), listConfigMaps)
	})
	b.stop()

	b = startBerthIn(t, dataDir)
	wait.Until(t, 2*time.Minute, "the deleted default binding to be created again", func() bool {
		_, err := b.admin.RbacV1().ClusterRoleBindings().Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
		return err == nil
	})
	wait.Until(t, 2*time.Minute, "view to have its default rules back and the operator's added rule", func() bool {
		view := rulesOf("view")
		return covers(view, listConfigMaps) && covers(view, getWidgets)
	})
	if edit := rulesOf("system:aggregate-to-edit"); len(edit) != 1 || !covers(edit, getPods) {
		t.Errorf("system:aggregate-to-edit, annotated autoupdate=false, was changed at the restart: %+v", edit)
	}
}

// covers reports whether one of rules grants every verb of want on all of
// its resources in its group.
func covers(rules []rbacv1.PolicyRule, want rbacv1.PolicyRule) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, want.APIGroups[0]) && slices.Contains(r.Resources, want.Resources[0]) && slices.Contains(r.Verbs, want.Verbs[0])
	})
}

// watchPodsAcrossNamespaces watches pods in all namespaces as the client
// and expects both teams' pods.
func watchPodsAcrossNamespaces(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := c.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch pods across namespaces: %v", err)
	}
	defer w.Stop()
	seen := map[string]bool{}
	for ev := range w.ResultChan() {
		if ev.Type != watch.Added {
			continue
		}
		if p, ok := ev.Object.(*corev1.Pod); ok {
			seen[p.Namespace+"/"+p.Name] = true
		}
		if seen["team-a/web-team-a"] && seen["team-b/web-team-b"] {
			return
		}
	}
	t.Fatalf("watch ended having seen only %v", seen)
}

func (b *berth) clientFor(id pki.Identity) kubernetes.Interface {
	b.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", b.kubeconfigFor(id))
	if err != nil {
		b.t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
