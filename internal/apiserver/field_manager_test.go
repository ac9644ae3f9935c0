package apiserver

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/yaml"

	"github.com/berth/berth/internal/apiserver/openapi"
	"github.com/berth/berth/internal/informeropts"
)

// The field manager's uncopied conversion records exactly what the scheme's
// copying conversion records, for creates, updates and applies, and leaves
// the objects it is given as they were (but for apiVersion and kind).
func TestUncopiedConversionRecordsTheSameManagedFields(t *testing.T) {
	t.Parallel()
	copying, uncopied := podFieldManagers(t)
	pod := requestingPod("p", "100m", 8080)
	pod.Namespace = "default"
	updated := pod.DeepCopy()
	updated.Labels["tier"] = "web"
	updated.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	updated.Status.Phase = corev1.PodRunning
	applied := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","labels":{"owner":"me"}},"spec":{"containers":[{"name":"c","image":"busybox","workingDir":"/w"}]}}`)

	// run records managed fields as manager m through both field managers,
	// each on its own copies of the inputs.
	run := func(name string, do func(fm *managedfields.FieldManager, live, obj runtime.Object) (runtime.Object, error), live, obj *corev1.Pod) *corev1.Pod {
		t.Helper()
		var results [2]*corev1.Pod
		for i, fm := range []*managedfields.FieldManager{copying, uncopied} {
			liveIn, objIn := live.DeepCopy(), obj.DeepCopy()
			out, err := do(fm, liveIn, objIn)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			results[i] = out.(*corev1.Pod)
			for what, pair := range map[string][2]*corev1.Pod{"live": {live, liveIn}, "new": {obj, objIn}} {
				before, after := pair[0].DeepCopy(), pair[1].DeepCopy()
				after.TypeMeta = before.TypeMeta
				if i == 1 && what == "live" && !apiequality.Semantic.DeepEqual(before, after) {
					t.Errorf("%s: the uncopied conversion changed the %s object", name, what)
				}
			}
			for j := range results[i].ManagedFields {
				results[i].ManagedFields[j].Time = nil
			}
		}
		if !apiequality.Semantic.DeepEqual(results[0].ManagedFields, results[1].ManagedFields) {
			t.Errorf("%s: managed fields differ:\ncopying  %s\nuncopied %s", name, fieldsJSON(results[0]), fieldsJSON(results[1]))
		}
		if len(results[1].ManagedFields) == 0 {
			t.Errorf("%s: no managed fields recorded", name)
		}
		return results[1]
	}
	update := func(fm *managedfields.FieldManager, live, obj runtime.Object) (runtime.Object, error) {
		return fm.Update(live, obj, "m")
	}
	created := run("create", update, &corev1.Pod{}, pod)
	changed := updated.DeepCopy()
	changed.ManagedFields = created.ManagedFields
	run("update", update, created, changed)
	run("apply", func(fm *managedfields.FieldManager, live, _ runtime.Object) (runtime.Object, error) {
		patch := &corev1.Pod{}
		if err := yaml.Unmarshal(applied, patch); err != nil {
			return nil, err
		}
		return fm.Apply(live, patch, "applier", false)
	}, created, created)
}

func fieldsJSON(p *corev1.Pod) string {
	b, _ := yaml.Marshal(struct {
		M []metav1.ManagedFieldsEntry `json:"m"`
	}{p.ManagedFields})
	return string(b)
}

// TestUpdateWithoutManagedFieldsKeepsThem: berth's in-process informers
// strip managedFields from what they cache (internal/informeropts); an
// update built from such a copy must leave the stored managedFields in
// place, as upstream does, and add the updater's own entry.
func TestUpdateWithoutManagedFieldsKeepsThem(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}},
		metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	cached, err := informeropts.StripManagedFields(created.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	cm := cached.(*corev1.ConfigMap)
	if cm.ManagedFields != nil {
		t.Fatal("StripManagedFields left managedFields")
	}
	cm.Data["b"] = "2"
	updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "controller"})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	for _, e := range updated.ManagedFields {
		managers[e.Manager] = true
	}
	if !managers["creator"] || !managers["controller"] {
		t.Fatalf("managedFields after an update without them: %+v, want entries of creator and controller", updated.ManagedFields)
	}
}

// Bindings and Evictions are consumed by their subresource and answered with
// a Status: their field manager records nothing on them, while a stored kind
// keeps its managed fields.
func TestConsumedRequestKindsGetNoManagedFields(t *testing.T) {
	t.Parallel()
	scheme, typeConverter := fieldManagerInputs(t)
	for _, tc := range []struct {
		obj        runtime.Object
		wantFields bool
	}{
		{&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n"}}, false},
		{&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}, false},
		{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": "v"}}, true},
	} {
		kinds, _, err := scheme.ObjectKinds(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		fm, err := newFieldManager(typeConverter, scheme, kinds[0], "", nil)
		if err != nil {
			t.Fatal(err)
		}
		live, _ := scheme.New(kinds[0])
		out, err := fm.Update(live, tc.obj, "kube-scheduler")
		if err != nil {
			t.Fatalf("%s: %v", kinds[0].Kind, err)
		}
		accessor, _ := meta.Accessor(out)
		if got := len(accessor.GetManagedFields()) > 0; got != tc.wantFields {
			t.Errorf("%s: managed fields recorded: %v, want %v (%v)", kinds[0].Kind, got, tc.wantFields, accessor.GetManagedFields())
		}
	}
}

// podFieldManagers are kube-apiserver's field manager for pods, as
// upstream builds it, and berth's.
func podFieldManagers(t *testing.T) (upstream, berth *managedfields.FieldManager) {
	t.Helper()
	scheme, typeConverter := fieldManagerInputs(t)
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	upstream, err := managedfields.NewDefaultFieldManager(typeConverter, scheme, scheme, scheme, kind, kind.GroupVersion(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if berth, err = newFieldManager(typeConverter, scheme, kind, "", nil); err != nil {
		t.Fatal(err)
	}
	return upstream, berth
}

// fieldManagerInputs is the scheme and OpenAPI type converter the server
// builds its field managers from.
func fieldManagerInputs(t *testing.T) (*runtime.Scheme, managedfields.TypeConverter) {
	t.Helper()
	scheme, err := newScheme(servedResources())
	if err != nil {
		t.Fatal(err)
	}
	typeConverter, err := openapi.TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	return scheme, typeConverter
}

// A status write keeps the entry the field manager records for it, with
// subresource "status", as upstream does (the kubelet's entries), and the
// main resource's entry as it was. The writer owns podIPs too: upstream's
// conversion fills them from podIP.
func TestStatusWritesRecordTheirManagedFields(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	createNodes(t, s, "n1")
	created, err := s.client.CoreV1().Pods("default").Create(ctx, localReadsPod("p"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"status":{"phase":"Running","podIP":"10.1.1.1"}}`)
	got, err := s.client.CoreV1().Pods("default").Patch(ctx, "p", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ManagedFields) != 2 || !apiequality.Semantic.DeepEqual(got.ManagedFields[0], created.ManagedFields[0]) {
		t.Fatalf("managed fields after a status patch: %+v", got.ManagedFields)
	}
	status := got.ManagedFields[1]
	if status.Subresource != "status" || status.Operation != metav1.ManagedFieldsOperationUpdate ||
		status.FieldsV1.GetRawString() != `{"f:status":{"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.1.1.1\"}":{".":{},"f:ip":{}}}}}` {
		t.Errorf("the status write's entry is %s %s %q %s", status.Manager, status.Operation, status.Subresource, status.FieldsV1.GetRawString())
	}
}

// Berth's field manager skips the schema check of Go-typed objects
// (structsUnchecked), and records what kube-apiserver's records on objects
// at the edges of the schema: duplicate and defaulted list-map keys, an
// empty key.
func TestUncheckedStructsRecordTheSameManagedFields(t *testing.T) {
	t.Parallel()
	checking, unchecked := podFieldManagers(t)
	pod := func(containers ...corev1.Container) *corev1.Pod {
		p := requestingPod("p", "100m", 8080)
		p.Namespace = "default"
		p.Spec.Containers = containers
		return p
	}
	withPullSecret := pod(corev1.Container{Name: "a", Image: "i"})
	withPullSecret.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: ""}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"valid", pod(corev1.Container{Name: "a", Image: "i"})},
		{"duplicate keys", pod(corev1.Container{Name: "a", Image: "i"}, corev1.Container{Name: "a", Image: "j"})},
		{"defaulted key", pod(corev1.Container{Name: "a", Ports: []corev1.ContainerPort{{ContainerPort: 80}}})},
		{"empty key", withPullSecret},
	} {
		var results [2]*corev1.Pod
		for i, fm := range []*managedfields.FieldManager{checking, unchecked} {
			out, err := fm.Update(&corev1.Pod{}, tc.pod.DeepCopy(), "m")
			if err != nil {
				t.Fatalf("%s: field manager %d: %v", tc.name, i, err)
			}
			results[i] = out.(*corev1.Pod)
			for j := range results[i].ManagedFields {
				results[i].ManagedFields[j].Time = nil
			}
		}
		if len(results[1].ManagedFields) == 0 {
			t.Errorf("%s: no managed fields recorded", tc.name)
		}
		if !apiequality.Semantic.DeepEqual(results[0].ManagedFields, results[1].ManagedFields) {
			t.Errorf("%s: managed fields differ:\nchecking  %s\nunchecked %s", tc.name, fieldsJSON(results[0]), fieldsJSON(results[1]))
		}
	}
}

// structsUnchecked asks the checking converter only for a kind's first
// typed object, and for every unstructured one.
func TestStructsUncheckedChecksOnlyAKindsFirstObject(t *testing.T) {
	t.Parallel()
	_, typeConverter := fieldManagerInputs(t)
	inner := &countingConverter{TypeConverter: typeConverter}
	c := newStructsUnchecked(inner)
	for i := range 3 {
		p := requestingPod("p"+strconv.Itoa(i), "100m", 8080)
		p.APIVersion, p.Kind = "v1", "Pod"
		if _, err := c.ObjectToTyped(p); err != nil {
			t.Fatal(err)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "u"}}}
	if _, err := c.ObjectToTyped(u); err != nil {
		t.Fatal(err)
	}
	if inner.calls != 2 {
		t.Fatalf("the checking converter ran %d times for three typed pods and one unstructured, want 2", inner.calls)
	}
}

type countingConverter struct {
	managedfields.TypeConverter
	calls int
}

func (c *countingConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	c.calls++
	return c.TypeConverter.ObjectToTyped(obj, opts...)
}
