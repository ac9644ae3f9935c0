package apiserver

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// scaleTarget is what a scale subresource needs of its kind: how to read
// the kind's Scale and where its replicas live.
type scaleTarget struct {
	resource     schema.GroupResource
	kind         string
	groupVersion schema.GroupVersion
	// read returns the object's desired and observed replicas and its
	// selector, or false for an object of another type.
	read func(runtime.Object) (spec, status int32, selector labels.Selector, ok bool, err error)
	// setReplicas writes spec.replicas.
	setReplicas func(runtime.Object, int32)
}

// scaleTargetFor is the scale target of res, as upstream's ScaleREST of
// that kind, or false if the kind has no scale subresource upstream.
func scaleTargetFor(res *resource) (scaleTarget, bool) {
	t := scaleTarget{resource: res.gvr.GroupResource(), kind: res.kind, groupVersion: res.gvr.GroupVersion()}
	switch res.gvk() {
	case corev1.SchemeGroupVersion.WithKind("ReplicationController"):
		t.read = readScale(func(rc *corev1.ReplicationController) (*int32, int32, labels.Selector, error) {
			// Upstream's scaleFromRC: the selector is a plain label map.
			return rc.Spec.Replicas, rc.Status.Replicas, labels.SelectorFromSet(rc.Spec.Selector), nil
		})
		t.setReplicas = setScale(func(rc *corev1.ReplicationController, n *int32) { rc.Spec.Replicas = n })
	case appsv1.SchemeGroupVersion.WithKind("Deployment"):
		t.read = readScale(func(d *appsv1.Deployment) (*int32, int32, labels.Selector, error) {
			return labelSelected(d.Spec.Replicas, d.Status.Replicas, d.Spec.Selector)
		})
		t.setReplicas = setScale(func(d *appsv1.Deployment, n *int32) { d.Spec.Replicas = n })
	case appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):
		t.read = readScale(func(rs *appsv1.ReplicaSet) (*int32, int32, labels.Selector, error) {
			return labelSelected(rs.Spec.Replicas, rs.Status.Replicas, rs.Spec.Selector)
		})
		t.setReplicas = setScale(func(rs *appsv1.ReplicaSet, n *int32) { rs.Spec.Replicas = n })
	case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
		t.read = readScale(func(ss *appsv1.StatefulSet) (*int32, int32, labels.Selector, error) {
			return labelSelected(ss.Spec.Replicas, ss.Status.Replicas, ss.Spec.Selector)
		})
		t.setReplicas = setScale(func(ss *appsv1.StatefulSet, n *int32) { ss.Spec.Replicas = n })
	default:
		return scaleTarget{}, false
	}
	return t, true
}

// labelSelected is an apps/v1 kind's Scale fields: its selector is a
// LabelSelector, which upstream's scaleFrom* functions convert (failing on
// an invalid one).
func labelSelected(spec *int32, status int32, selector *metav1.LabelSelector) (*int32, int32, labels.Selector, error) {
	s, err := metav1.LabelSelectorAsSelector(selector)
	return spec, status, s, err
}

// readScale adapts a typed reader of a kind's Scale fields to scaleTarget.read.
func readScale[T runtime.Object](read func(T) (*int32, int32, labels.Selector, error)) func(runtime.Object) (int32, int32, labels.Selector, bool, error) {
	return func(obj runtime.Object) (int32, int32, labels.Selector, bool, error) {
		typed, ok := obj.(T)
		if !ok {
			return 0, 0, nil, false, nil
		}
		spec, status, selector, err := read(typed)
		var replicas int32
		if spec != nil {
			replicas = *spec
		}
		return replicas, status, selector, true, err
	}
}

// setScale adapts a typed writer of spec.replicas to scaleTarget.setReplicas.
func setScale[T runtime.Object](set func(T, *int32)) func(runtime.Object, int32) {
	return func(obj runtime.Object, n int32) { set(obj.(T), &n) }
}

// is reports whether obj is of the target's kind.
func (t scaleTarget) is(obj runtime.Object) bool {
	_, _, _, ok, _ := t.read(obj)
	return ok
}

// subresource names the scale subresource in errors ("deployments/scale").
func (t scaleTarget) subresource() schema.GroupResource {
	return schema.GroupResource{Group: t.resource.Group, Resource: t.resource.Resource + "/scale"}
}

// replicasPath is where a Scale's spec.replicas lives in the controller,
// for moving managedFields between the two.
func (t scaleTarget) replicasPath() managedfields.ResourcePathMappings {
	return managedfields.ResourcePathMappings{t.groupVersion.String(): fieldpath.MakePathOrDie("spec", "replicas")}
}

// scaleOf is the object's Scale, as upstream's scaleFrom* of its kind.
func (t scaleTarget) scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
	spec, status, selector, ok, err := t.read(obj)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", t.kind, obj)
	}
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector.String()},
	}, nil
}
