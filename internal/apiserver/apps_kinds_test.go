package apiserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// webLabels select the pods of every workload in these tests.
var webLabels = map[string]string{"app": "web"}

func webTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: webLabels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// TestAppsKindsUseUpstreamRules creates each apps/v1 kind once valid and
// once invalid: the defaults and the refusals are kube-apiserver's
// (upstream's registry strategies), and each is stored under its own key.
func TestAppsKindsUseUpstreamRules(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	apps := s.client.AppsV1()
	selector := &metav1.LabelSelector{MatchLabels: webLabels}

	d, err := apps.Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: selector, Template: webTemplate()}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	if d.Generation != 1 || ptr.Deref(d.Spec.Replicas, 0) != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		ptr.Deref(d.Spec.RevisionHistoryLimit, 0) != 10 || d.Spec.ProgressDeadlineSeconds == nil {
		t.Fatalf("deployment defaults: generation %d, spec %+v", d.Generation, d.Spec)
	}
	// A template whose labels the selector does not match is upstream's refusal.
	bad := webTemplate()
	bad.Labels = map[string]string{"app": "other"}
	_, err = apps.Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: appsv1.DeploymentSpec{Selector: selector, Template: bad}}, metav1.CreateOptions{})
	wantInvalidOn(t, "deployment with unmatched template labels", err, "spec.template.metadata.labels")
	// The selector cannot change after creation.
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
	d.Spec.Template.Labels = d.Spec.Selector.MatchLabels
	_, err = apps.Deployments("default").Update(ctx, d, metav1.UpdateOptions{})
	wantInvalidOn(t, "deployment selector change", err, "spec.selector")

	rs, err := apps.ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: selector, Template: webTemplate()}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create replicaset: %v", err)
	}
	_, err = apps.ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "neg"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](-1), Selector: selector, Template: webTemplate()}}, metav1.CreateOptions{})
	wantInvalidOn(t, "replicaset with negative replicas", err, "spec.replicas")
	// status.replicas is a field selector of ReplicaSets, as upstream.
	list, err := apps.ReplicaSets("default").List(ctx, metav1.ListOptions{FieldSelector: "status.replicas=0"})
	if err != nil || len(list.Items) != 1 || list.Items[0].UID != rs.UID {
		t.Fatalf("replicasets with status.replicas=0: %v, %v", list, err)
	}
	if _, err := apps.ReplicaSets("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.replicas=1"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("an unsupported field selector: %v, want BadRequest", err)
	}
	// The status subresource writes status only.
	rs.Status.Replicas = 2
	rs.Spec.Replicas = ptr.To[int32](5)
	got, err := apps.ReplicaSets("default").UpdateStatus(ctx, rs, metav1.UpdateOptions{})
	if err != nil || got.Status.Replicas != 2 || *got.Spec.Replicas != 2 {
		t.Fatalf("status update: %+v, %v; want status 2 and spec unchanged", got, err)
	}

	ss, err := apps.StatefulSets("default").Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Selector: selector, Template: webTemplate(), ServiceName: "db"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create statefulset: %v", err)
	}
	if ss.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || ss.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Fatalf("statefulset defaults: %+v", ss.Spec)
	}
	ss.Spec.ServiceName = "other"
	_, err = apps.StatefulSets("default").Update(ctx, ss, metav1.UpdateOptions{})
	wantInvalidOn(t, "statefulset serviceName change", err, "spec")

	ds, err := apps.DaemonSets("default").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: selector, Template: webTemplate()}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create daemonset: %v", err)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Generation != 1 {
		t.Fatalf("daemonset defaults: generation %d, %+v", ds.Generation, ds.Spec)
	}
	// As kube-apiserver, whose decoder goes through the internal form: the
	// template generation is an annotation, which its creator manages.
	if ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "1" || len(ds.ManagedFields) != 1 ||
		!strings.Contains(ds.ManagedFields[0].FieldsV1.GetRawString(), `"f:`+appsv1.DeprecatedTemplateGeneration+`"`) {
		t.Fatalf("daemonset template generation: annotations %v, managedFields %v", ds.Annotations, ds.ManagedFields)
	}
	restart := webTemplate()
	restart.Spec.RestartPolicy = corev1.RestartPolicyNever
	_, err = apps.DaemonSets("default").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "never"},
		Spec: appsv1.DaemonSetSpec{Selector: selector, Template: restart}}, metav1.CreateOptions{})
	wantInvalidOn(t, "daemonset whose pods never restart", err, "spec.template.spec.restartPolicy")

	cr, err := apps.ControllerRevisions("default").Create(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-1"},
		Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create controllerrevision: %v", err)
	}
	cr.Data = runtime.RawExtension{Raw: []byte(`{"spec":{"x":1}}`)}
	_, err = apps.ControllerRevisions("default").Update(ctx, cr, metav1.UpdateOptions{})
	wantInvalidOn(t, "controllerrevision data change", err, "data")

	for _, key := range []string{"/registry/deployments/default/web", "/registry/replicasets/default/web",
		"/registry/statefulsets/default/db", "/registry/daemonsets/default/agent", "/registry/controllerrevisions/default/agent-1"} {
		if kv, err := s.store.Get(ctx, key); err != nil || len(kv.Value) == 0 {
			t.Errorf("kube-apiserver's key %s: %v, %v", key, kv, err)
		}
	}
}

// TestAppsScale reads and writes deployments', replicasets' and
// statefulsets' replicas through their scale subresources, with the
// selector as a string and upstream's validation and preconditions.
func TestAppsScale(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	apps := s.client.AppsV1()
	selector := &metav1.LabelSelector{MatchLabels: webLabels,
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}
	if _, err := apps.Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: selector, Template: webTemplate()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: webTemplate()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.StatefulSets("default").Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{Selector: selector, Template: webTemplate()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	type scaler struct {
		resource string
		replicas func() (int32, error)
	}
	for _, kind := range []scaler{
		{"deployments", func() (int32, error) {
			d, err := apps.Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			return ptr.Deref(d.Spec.Replicas, -1), err
		}},
		{"replicasets", func() (int32, error) {
			rs, err := apps.ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
			return ptr.Deref(rs.Spec.Replicas, -1), err
		}},
		{"statefulsets", func() (int32, error) {
			ss, err := apps.StatefulSets("default").Get(ctx, "web", metav1.GetOptions{})
			return ptr.Deref(ss.Spec.Replicas, -1), err
		}},
	} {
		scales := s.jsonCli.AppsV1().RESTClient()
		path := func(name string) []string { return []string{"namespaces", "default", kind.resource, name, "scale"} }
		var scale struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
			Spec              struct{ Replicas int32 } `json:"spec"`
			Status            struct {
				Replicas int32
				Selector string
			} `json:"status"`
		}
		raw, err := scales.Get().AbsPath(append([]string{"/apis/apps/v1"}, path("web")...)...).DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s: get scale: %v", kind.resource, err)
		}
		if err := json.Unmarshal(raw, &scale); err != nil {
			t.Fatal(err)
		}
		if scale.APIVersion != "autoscaling/v1" || scale.Kind != "Scale" || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web,tier notin (db)" {
			t.Fatalf("%s: scale = %s", kind.resource, raw)
		}
		patch := []byte(`{"spec":{"replicas":4}}`)
		if _, err := scales.Patch(types.MergePatchType).AbsPath(append([]string{"/apis/apps/v1"}, path("web")...)...).Body(patch).DoRaw(ctx); err != nil {
			t.Fatalf("%s: patch scale: %v", kind.resource, err)
		}
		if n, err := kind.replicas(); err != nil || n != 4 {
			t.Fatalf("%s: spec.replicas after scaling to 4: %d, %v", kind.resource, n, err)
		}
		// The scale's resourceVersion is a precondition: the stale one conflicts.
		stale := []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"default","resourceVersion":"` +
			scale.ResourceVersion + `"},"spec":{"replicas":2}}`)
		_, err = scales.Put().AbsPath(append([]string{"/apis/apps/v1"}, path("web")...)...).Body(stale).DoRaw(ctx)
		if !apierrors.IsConflict(err) {
			t.Fatalf("%s: update with a stale resourceVersion: %v, want a conflict", kind.resource, err)
		}
		body, err := scales.Patch(types.MergePatchType).AbsPath(append([]string{"/apis/apps/v1"}, path("web")...)...).Body([]byte(`{"spec":{"replicas":-1}}`)).DoRaw(ctx)
		if !apierrors.IsInvalid(err) || !strings.Contains(string(body), `"field":"spec.replicas"`) {
			t.Fatalf("%s: scaled to -1: %v %s, want Invalid on spec.replicas", kind.resource, err, body)
		}
		_, err = scales.Get().AbsPath(append([]string{"/apis/apps/v1"}, path("missing")...)...).DoRaw(ctx)
		if !apierrors.IsNotFound(err) {
			t.Fatalf("%s: scale of a missing object: %v, want NotFound", kind.resource, err)
		}
	}
	// Typed clients read the same Scale.
	scale, err := apps.Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 4 {
		t.Fatalf("typed deployment scale: %+v, %v", scale, err)
	}
}

// TestAppsKindsInDiscovery checks apps/v1 in aggregated discovery: short
// names, the "all" category and subresources as kube-apiserver's.
func TestAppsKindsInDiscovery(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, lists, err := s.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, list := range lists {
		if list.GroupVersion != "apps/v1" {
			continue
		}
		for _, r := range list.APIResources {
			names[r.Name] = true
			switch r.Name {
			case "deployments", "replicasets", "statefulsets", "daemonsets":
				if !slices.Equal(r.Categories, []string{"all"}) || len(r.ShortNames) != 1 || !r.Namespaced {
					t.Errorf("%s: categories %v, short names %v, namespaced %v", r.Name, r.Categories, r.ShortNames, r.Namespaced)
				}
			}
		}
	}
	for _, want := range []string{"deployments", "deployments/scale", "deployments/status", "replicasets/scale", "statefulsets/scale",
		"daemonsets/status", "controllerrevisions"} {
		if !names[want] {
			t.Errorf("apps/v1 discovery lacks %s (has %v)", want, names)
		}
	}
}

// wantInvalidOn fails unless err is an Invalid naming field.
func wantInvalidOn(t *testing.T, what string, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), field) {
		t.Fatalf("%s: %v, want Invalid on %s", what, err, field)
	}
}

// TestWorkloadTablesAreUpstreams: kubectl get deployments, replicasets,
// statefulsets, daemonsets, jobs and cronjobs show kube-apiserver's
// columns (upstream's printers).
func TestWorkloadTablesAreUpstreams(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	selector := &metav1.LabelSelector{MatchLabels: webLabels}
	if _, err := s.client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: selector, Template: webTemplate()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/apis/apps/v1/namespaces/default/deployments":  "Name Ready Up-to-date Available Age Containers Images Selector",
		"/apis/apps/v1/namespaces/default/replicasets":  "Name Desired Current Ready Age Containers Images Selector",
		"/apis/apps/v1/namespaces/default/statefulsets": "Name Ready Age Containers Images",
		"/apis/apps/v1/namespaces/default/daemonsets":   "Name Desired Current Ready Up-to-date Available Node Selector Age Containers Images Selector",
		"/apis/batch/v1/namespaces/default/jobs":        "Name Status Completions Duration Age Containers Images Selector",
		"/apis/batch/v1/namespaces/default/cronjobs":    "Name Schedule Timezone Suspend Active Last Schedule Age Containers Images Selector",
	} {
		if got, _ := tableOf(t, s, path); got != want {
			t.Errorf("%s columns %q, want %q", path, got, want)
		}
	}
}

// TestKubectlWorkloads drives the workload kinds with upstream kubectl:
// create deployment and job, scale (through the scale subresource), get
// with the all category and short names, and rollout history (which reads
// the Deployment's ReplicaSets; this server runs no controllers, so it has
// none).
func TestKubectlWorkloads(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	k := newKubectl(t, s)
	k.Must("", []string{"create", "deployment", "web", "--image=busybox:1.36", "--replicas=2"}, "deployment.apps/web created")
	k.Must("", []string{"scale", "deployment", "web", "--replicas=3"}, "deployment.apps/web scaled")
	k.Must("", []string{"get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"}, "3")
	k.Must("", []string{"create", "job", "once", "--image=busybox:1.36", "--", "true"}, "job.batch/once created")
	k.Must("", []string{"create", "cronjob", "hourly", "--image=busybox:1.36", "--schedule=0 * * * *"}, "cronjob.batch/hourly created")
	k.Must("", []string{"get", "all"}, "deployment.apps/web", "0/3", "job.batch/once", "cronjob.batch/hourly", "0 * * * *")
	k.Must("", []string{"get", "cj,rs,sts,ds"}, "hourly")
	k.Must("", []string{"rollout", "history", "deployment/web"}, "deployment.apps/web")
	k.Must("", []string{"delete", "deployment", "web"}, `deployment.apps "web" deleted`)
	k.Must("", []string{"delete", "job", "once", "--cascade=background"}, `job.batch "once" deleted`)
}
