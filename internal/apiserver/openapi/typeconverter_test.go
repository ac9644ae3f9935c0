package openapi

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/randfill"
)

// managedFieldsOf runs a create and then an update of obj through a field
// manager built on converter, as the API server's handlers do, and returns
// the managedFields each recorded (their times cleared).
func managedFieldsOf(t *testing.T, scheme *runtime.Scheme, converter managedfields.TypeConverter, gvk schema.GroupVersionKind, created, updated runtime.Object) [2][]metav1.ManagedFieldsEntry {
	t.Helper()
	fm, err := managedfields.NewDefaultFieldManager(converter, runtime.UnsafeObjectConvertor(scheme), scheme, scheme, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	var out [2][]metav1.ManagedFieldsEntry
	live := fm.UpdateNoErrors(empty, created.DeepCopyObject(), "creator")
	next := updated.DeepCopyObject()
	mustAccessor(t, next).SetManagedFields(mustAccessor(t, live).GetManagedFields())
	result := fm.UpdateNoErrors(live, next, "updater")
	for i, obj := range []runtime.Object{live, result} {
		entries := mustAccessor(t, obj).GetManagedFields()
		for j := range entries {
			entries[j].Time = nil
		}
		out[i] = entries
	}
	return out
}

func mustAccessor(t *testing.T, obj runtime.Object) metav1.Object {
	t.Helper()
	a, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The typed conversion without validation records exactly the managed
// fields the upstream converter does, for random objects of every kind
// berth serves a schema for, created and then changed.
func TestTypedObjectsRecordTheSameManagedFields(t *testing.T) {
	ours, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	upstream := ours.(typedObjects).TypeConverter
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	fill := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(1), serializer.NewCodecFactory(scheme)).
		NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) { *q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI) },
		func(r *runtime.RawExtension, c randfill.Continue) { *r = runtime.RawExtension{} },
	)
	var kinds []schema.GroupVersionKind
	for gvk := range ours.(typedObjects).types {
		obj, err := scheme.New(gvk)
		if err != nil {
			continue
		}
		if _, err := meta.Accessor(obj); err == nil { // objects, not lists or options
			kinds = append(kinds, gvk)
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	if len(kinds) < 50 {
		t.Fatalf("only %d kinds to compare", len(kinds))
	}
	recorded, cases := 0, 0
	for _, gvk := range kinds {
		for round := range 5 {
			created, _ := scheme.New(gvk)
			updated, _ := scheme.New(gvk)
			fill.Fill(created)
			fill.Fill(updated)
			for _, obj := range []runtime.Object{created, updated} {
				obj.GetObjectKind().SetGroupVersionKind(gvk)
				mustAccessor(t, obj).SetManagedFields(nil)
			}
			want := managedFieldsOf(t, scheme, upstream, gvk, created, updated)
			got := managedFieldsOf(t, scheme, ours, gvk, created, updated)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s round %d: managed fields differ\nours:     %v\nupstream: %v", gvk, round, got, want)
			}
			cases++
			if len(want[1]) > 0 && want[1][0].FieldsV1 != nil && len(want[1][0].FieldsV1.Raw) > 2 {
				recorded++
			}
		}
	}
	// The comparison means something only where fields were recorded.
	if recorded < cases*3/4 {
		t.Errorf("fields recorded in only %d of %d cases", recorded, cases)
	}
	t.Logf("%d kinds, %d cases, fields recorded in %d", len(kinds), cases, recorded)
}

// Duplicate list items, which API validation lets through for some lists
// (env vars by name), come out the same way too.
func TestTypedObjectsHandleDuplicatesAsUpstream(t *testing.T) {
	ours, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	pod := func(env ...string) *corev1.Pod {
		p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}, {Name: "c", Image: "dup"}}}}
		for i, name := range env {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: fmt.Sprint(i)})
		}
		return p
	}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	created, updated := pod("A", "A", "B"), pod("A", "B", "B")
	want := managedFieldsOf(t, scheme, ours.(typedObjects).TypeConverter, gvk, created, updated)
	got := managedFieldsOf(t, scheme, ours, gvk, created, updated)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("managed fields differ\nours:     %v\nupstream: %v", got, want)
	}
}

// The managed fields of one pod create, with each converter.
func BenchmarkPodCreateManagedFields(b *testing.B) {
	ours, err := TypeConverter()
	if err != nil {
		b.Fatal(err)
	}
	scheme, err := newScheme()
	if err != nil {
		b.Fatal(err)
	}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			NodeName: "n", RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", TerminationMessagePath: "/dev/termination-log",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}}}}}},
		},
	}
	for name, converter := range map[string]managedfields.TypeConverter{"upstream": ours.(typedObjects).TypeConverter, "unvalidated": ours} {
		b.Run(name, func(b *testing.B) {
			fm, err := managedfields.NewDefaultFieldManager(converter, runtime.UnsafeObjectConvertor(scheme), scheme, scheme, gvk, gvk.GroupVersion(), "", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				fm.UpdateNoErrors(&corev1.Pod{}, pod.DeepCopy(), "creator")
			}
		})
	}
}
