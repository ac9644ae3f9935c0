package apiserver

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	// The autoscaling group's internal Scale and conversions, which
	// upstream's Scale validation takes.
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// scaleREST serves replicationcontrollers/NAME/scale: an autoscaling/v1
// Scale read from the controller and written into its spec.replicas, as
// upstream's ScaleREST (pkg/registry/core/replicationcontroller/storage)
// does over its generic store. Upstream's type is bound to that store, so
// berth follows it here over its own.
type scaleREST struct {
	controllers *resourceREST
}

var (
	_ rest.Getter                   = (*scaleREST)(nil)
	_ rest.Updater                  = (*scaleREST)(nil)
	_ rest.GroupVersionKindProvider = (*scaleREST)(nil)
)

// replicasInController is where a Scale's spec.replicas lives in the
// controller, for moving managedFields between the two.
var replicasInController = managedfields.ResourcePathMappings{
	corev1.SchemeGroupVersion.String(): fieldpath.MakePathOrDie("spec", "replicas"),
}

func (s *scaleREST) New() runtime.Object { return &autoscalingv1.Scale{} }
func (s *scaleREST) Destroy()            {}

func (s *scaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

func (s *scaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.controllers.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return scaleOf(obj.(*corev1.ReplicationController)), nil
}

func (s *scaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := s.controllers.Update(ctx, name, &scaleUpdate{name: name, request: objInfo, kinds: s},
		func(ctx context.Context, obj runtime.Object) error {
			return createValidation(ctx, scaleOf(obj.(*corev1.ReplicationController)))
		},
		func(ctx context.Context, obj, old runtime.Object) error {
			return updateValidation(ctx, scaleOf(obj.(*corev1.ReplicationController)), scaleOf(old.(*corev1.ReplicationController)))
		},
		false, options)
	if err != nil {
		return nil, false, err
	}
	return scaleOf(obj.(*corev1.ReplicationController)), false, nil
}

func (s *scaleREST) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return s.controllers.ConvertToTable(ctx, object, tableOptions)
}

// scaleOf is a controller's Scale, as upstream's scaleFromRC.
func scaleOf(rc *corev1.ReplicationController) *autoscalingv1.Scale {
	var replicas int32
	if rc.Spec.Replicas != nil {
		replicas = *rc.Spec.Replicas
	}
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: rc.Name, Namespace: rc.Namespace, UID: rc.UID,
			ResourceVersion: rc.ResourceVersion, CreationTimestamp: rc.CreationTimestamp},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: rc.Status.Replicas, Selector: labels.SelectorFromSet(rc.Spec.Selector).String()},
	}
}

// scaleUpdate turns the stored controller into its Scale, applies the
// request to that, and moves the new replicas (and resourceVersion
// precondition) back into the controller.
type scaleUpdate struct {
	name    string
	request rest.UpdatedObjectInfo
	kinds   rest.GroupVersionKindProvider
}

func (u *scaleUpdate) Preconditions() *metav1.Preconditions { return u.request.Preconditions() }

func (u *scaleUpdate) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	rc, ok := oldObj.DeepCopyObject().(*corev1.ReplicationController)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected existing object type to be ReplicationController, got %T", oldObj))
	}
	if rc.ResourceVersion == "" { // the zero object: nothing stored
		return nil, apierrors.NewNotFound(corev1.Resource("replicationcontrollers/scale"), u.name)
	}
	fields := managedfields.NewScaleHandler(rc.ManagedFields, corev1.SchemeGroupVersion, replicasInController)
	oldScale := scaleOf(rc)
	var err error
	if oldScale.ManagedFields, err = fields.ToSubresource(); err != nil {
		return nil, err
	}
	obj, err := u.request.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	scale, ok := obj.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", obj))
	}
	if errs := autoscalingvalidation.ValidateScaleUpdate(ctx, internalScale(scale), internalScale(oldScale), legacyscheme.Scheme, u.kinds); len(errs) > 0 {
		return nil, apierrors.NewInvalid(autoscaling.Kind("Scale"), rc.Name, errs)
	}
	if scale.UID != "" && scale.UID != rc.UID {
		return nil, apierrors.NewConflict(corev1.Resource("replicationcontrollers/scale"), rc.Name,
			//lint:ignore ST1005 kube-apiserver's own message, word for word
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, rc.UID))
	}
	replicas := scale.Spec.Replicas
	rc.Spec.Replicas = &replicas
	rc.ResourceVersion = scale.ResourceVersion
	if rc.ManagedFields, err = fields.ToParent(scale.ManagedFields); err != nil {
		return nil, err
	}
	return rc, nil
}

func internalScale(s *autoscalingv1.Scale) *autoscaling.Scale {
	in := &autoscaling.Scale{}
	if err := legacyscheme.Scheme.Convert(s, in, nil); err != nil {
		panic(err) // generated conversions of a registered pair do not fail
	}
	return in
}

// scaleEndpoint serves a Scale subresource: get, update and patch.
func (f *scopeFactory) scaleEndpoint(res *resource, r *scaleREST) (*endpoint, error) {
	return f.readWriteEndpoint(res, autoscalingv1.SchemeGroupVersion.WithKind("Scale"), "scale", r)
}
