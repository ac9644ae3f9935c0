package podsecurity

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"
)

// fakeCluster answers the plugin's reads: namespaces by name, their pods.
type fakeCluster struct {
	namespaces map[string]*corev1.Namespace
	pods       []*corev1.Pod
}

func (f *fakeCluster) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := f.namespaces[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
}

func (f *fakeCluster) ListPods(_ context.Context, namespace string) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range f.pods {
		if p.Namespace == namespace {
			out = append(out, p)
		}
	}
	return out, nil
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func newCluster(nss ...*corev1.Namespace) *fakeCluster {
	f := &fakeCluster{namespaces: map[string]*corev1.Namespace{}}
	for _, ns := range nss {
		f.namespaces[ns.Name] = ns
	}
	return f
}

func newPlugin(t *testing.T, f *fakeCluster) *Plugin {
	t.Helper()
	p, err := New(Config{Namespaces: f, Pods: f})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// restrictedPod meets the restricted level.
func restrictedPod(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{Name: "c", Image: "img", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		},
	}
}

// baselinePod meets baseline but not restricted (no securityContext at all).
func baselinePod(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
	}
}

// hostPathPod violates baseline.
func hostPathPod(ns string) *corev1.Pod {
	p := baselinePod(ns)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/berth"}}}}
	return p
}

var (
	podsGVR       = corev1.SchemeGroupVersion.WithResource("pods")
	namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")
	podGVK        = corev1.SchemeGroupVersion.WithKind("Pod")
)

func attrs(obj, old runtime.Object, ns, name string, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource, sub string, op admission.Operation, userName string) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, gvk, ns, name, gvr, sub, op, nil, false, &user.DefaultInfo{Name: userName})
}

func createPod(pod *corev1.Pod) admission.Attributes {
	return attrs(pod, nil, pod.Namespace, pod.Name, podGVK, podsGVR, "", admission.Create, "alice")
}

type recordedWarnings []string

func (r *recordedWarnings) AddWarning(_, text string) { *r = append(*r, text) }

// validate runs the plugin as the API server would: with a warning
// recorder and an audit context in the request's context.
func validate(p *Plugin, a admission.Attributes) ([]string, map[string]string, error) {
	var w recordedWarnings
	ctx := warning.WithWarningRecorder(audit.WithAuditContext(context.Background()), &w)
	err := p.Validate(ctx, a, nil)
	return w, audit.AuditContextFrom(ctx).GetEventAnnotations(), err
}

func TestDefaultsRefuseBaselineViolations(t *testing.T) {
	p := newPlugin(t, newCluster(namespace("team", nil)))
	_, annotations, err := validate(p, createPod(hostPathPod("team")))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want 403 Forbidden, got %v", err)
	}
	want := `pods "p" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes (volume "data")`
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
	if code := err.(apierrors.APIStatus).Status().Code; code != http.StatusForbidden {
		t.Errorf("code %d, want 403", code)
	}
	if annotations["pod-security.kubernetes.io/enforce-policy"] != "baseline:latest" {
		t.Errorf("audit annotations %v lack enforce-policy=baseline:latest", annotations)
	}
}

func TestDefaultsWarnAndAuditRestrictedViolations(t *testing.T) {
	p := newPlugin(t, newCluster(namespace("team", nil)))
	warnings, annotations, err := validate(p, createPod(baselinePod("team")))
	if err != nil {
		t.Fatalf("a baseline pod was refused: %v", err)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], `would violate PodSecurity "restricted:latest": `) {
		t.Errorf("warnings %q, want one restricted:latest violation", warnings)
	}
	if v := annotations["pod-security.kubernetes.io/audit-violations"]; !strings.Contains(v, `would violate PodSecurity "restricted:latest"`) {
		t.Errorf("audit annotations %v lack audit-violations", annotations)
	}
	warnings, _, err = validate(p, createPod(restrictedPod("team")))
	if err != nil || len(warnings) != 0 {
		t.Errorf("a restricted pod: err %v, warnings %q; want neither", err, warnings)
	}
}

func TestKubeSystemIsExempt(t *testing.T) {
	p := newPlugin(t, newCluster(namespace("kube-system", nil)))
	warnings, annotations, err := validate(p, createPod(hostPathPod("kube-system")))
	if err != nil || len(warnings) != 0 {
		t.Errorf("kube-system: err %v, warnings %q; want neither", err, warnings)
	}
	if annotations["pod-security.kubernetes.io/exempt"] != "namespace" {
		t.Errorf("audit annotations %v lack exempt=namespace", annotations)
	}
}

func TestPrivilegedNamespaceLabelOptsOut(t *testing.T) {
	p := newPlugin(t, newCluster(namespace("infra", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})))
	_, _, err := validate(p, createPod(hostPathPod("infra")))
	if err != nil {
		t.Errorf("a privileged namespace refused a hostPath pod: %v", err)
	}
}

func TestPodTemplatesAreWarnedNotRefused(t *testing.T) {
	p := newPlugin(t, newCluster(namespace("team", nil)))
	pod := hostPathPod("team")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "team"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: pod.Spec}}}
	a := attrs(d, nil, "team", "d", appsv1.SchemeGroupVersion.WithKind("Deployment"), appsv1.SchemeGroupVersion.WithResource("deployments"), "", admission.Create, "alice")
	warnings, _, err := validate(p, a)
	if err != nil {
		t.Fatalf("a deployment was refused (templates are only warned about): %v", err)
	}
	// Warned at the warn level (restricted), which refuses hostPath too.
	if len(warnings) != 1 || !strings.Contains(warnings[0], `volume "data" uses restricted volume type "hostPath"`) {
		t.Errorf("warnings %q, want the template's hostPath volume", warnings)
	}
}

func TestPodSubresources(t *testing.T) {
	p := newPlugin(t, newCluster(namespace("team", nil)))
	old := restrictedPod("team")
	withPrivileged := old.DeepCopy()
	withPrivileged.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "img", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
	update := func(sub string) admission.Attributes {
		return attrs(withPrivileged, old, "team", "p", podGVK, podsGVR, sub, admission.Update, "alice")
	}
	if _, _, err := validate(p, update("ephemeralcontainers")); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "privileged") {
		t.Errorf("a privileged ephemeral container: want 403 naming privileged, got %v", err)
	}
	// Status is the node's report, not the user's spec.
	if _, _, err := validate(p, update("status")); err != nil {
		t.Errorf("pods/status: %v", err)
	}
}

func TestUpdatesThatDoNotChangeTheSpecAreAllowed(t *testing.T) {
	f := newCluster(namespace("team", nil))
	p := newPlugin(t, f)
	old := hostPathPod("team") // created before the namespace was tightened
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "db"}
	a := attrs(relabelled, old, "team", "p", podGVK, podsGVR, "", admission.Update, "alice")
	if _, _, err := validate(p, a); err != nil {
		t.Errorf("a label change on an existing pod was refused: %v", err)
	}
}

func TestTighteningANamespaceWarnsAboutItsPods(t *testing.T) {
	f := newCluster(namespace("infra", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}))
	f.pods = []*corev1.Pod{hostPathPod("infra")}
	p := newPlugin(t, f)
	old := f.namespaces["infra"]
	tightened := namespace("infra", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	a := attrs(tightened, old, "infra", "infra", corev1.SchemeGroupVersion.WithKind("Namespace"), namespacesGVR, "", admission.Update, "alice")
	warnings, _, err := validate(p, a)
	if err != nil {
		t.Fatalf("the label change was refused: %v", err)
	}
	if len(warnings) == 0 || !strings.Contains(strings.Join(warnings, "\n"), `existing pods in namespace "infra" violate the new PodSecurity enforce level "baseline:latest"`) {
		t.Errorf("warnings %q, want one about the existing pod", warnings)
	}
}

func TestInvalidNamespaceLabelIsRefused(t *testing.T) {
	p := newPlugin(t, newCluster())
	ns := namespace("bad", map[string]string{"pod-security.kubernetes.io/enforce": "strictest"})
	a := attrs(ns, nil, "", "bad", corev1.SchemeGroupVersion.WithKind("Namespace"), namespacesGVR, "", admission.Create, "alice")
	_, _, err := validate(p, a)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod-security.kubernetes.io/enforce") {
		t.Errorf("want 422 naming the label, got %v", err)
	}
}

func TestExemptUsersFromConfiguration(t *testing.T) {
	cfg := Default()
	cfg.Exemptions.Usernames = []string{"system:serviceaccount:ops:deployer"}
	f := newCluster(namespace("team", nil))
	p, err := New(Config{Configuration: cfg, Namespaces: f, Pods: f})
	if err != nil {
		t.Fatal(err)
	}
	pod := hostPathPod("team")
	for userName, allowed := range map[string]bool{"system:serviceaccount:ops:deployer": true, "alice": false} {
		a := attrs(pod, nil, "team", "p", podGVK, podsGVR, "", admission.Create, userName)
		if _, _, err := validate(p, a); (err == nil) != allowed {
			t.Errorf("%s: allowed %v, want %v (err %v)", userName, err == nil, allowed, err)
		}
	}
}

func TestUnknownNamespaceIsAnInternalError(t *testing.T) {
	p := newPlugin(t, newCluster())
	_, _, err := validate(p, createPod(baselinePod("gone")))
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed to lookup namespace "gone"`) {
		t.Errorf("want 500 naming the namespace, got %v", err)
	}
}

func TestOtherResourcesAndDeletesAreNotEvaluated(t *testing.T) {
	p := newPlugin(t, newCluster())
	if p.Handles(admission.Delete) || p.Handles(admission.Connect) || !p.Handles(admission.Create) || !p.Handles(admission.Update) {
		t.Error("want creates and updates only")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "gone"}}
	a := attrs(cm, nil, "gone", "c", corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, "alice")
	if _, _, err := validate(p, a); err != nil {
		t.Errorf("a configmap reached the policy: %v", err)
	}
}

func TestNewRequiresReaders(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(fmt.Sprint(err), "NamespaceGetter required") {
		t.Errorf("want an error naming the missing namespace reader, got %v", err)
	}
}
