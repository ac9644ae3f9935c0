package apiserver

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
)

// scaleREST serves a controller's scale subresource (replicationcontrollers,
// and apps/v1 deployments, replicasets and statefulsets): an
// autoscaling/v1 Scale read from the controller and written into its
// spec.replicas, as upstream's ScaleREST of each kind
// (pkg/registry/{core/replicationcontroller,apps/*}/storage) does over its
// generic store. Upstream's types are bound to that store, so berth
// follows them here over its own; what differs by kind is scaleTarget
// (scale_targets.go).
type scaleREST struct {
	controllers *resourceREST
	target      scaleTarget
}

var (
	_ rest.Getter                   = (*scaleREST)(nil)
	_ rest.Updater                  = (*scaleREST)(nil)
	_ rest.GroupVersionKindProvider = (*scaleREST)(nil)
)

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
	scale, err := s.target.scaleOf(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return scale, nil
}

func (s *scaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := s.controllers.Update(ctx, name, &scaleUpdate{name: name, request: objInfo, kinds: s, target: s.target},
		func(ctx context.Context, obj runtime.Object) error {
			scale, err := s.target.scaleOf(obj)
			if err != nil {
				return err
			}
			return createValidation(ctx, scale)
		},
		func(ctx context.Context, obj, old runtime.Object) error {
			scale, err := s.target.scaleOf(obj)
			if err != nil {
				return err
			}
			oldScale, err := s.target.scaleOf(old)
			if err != nil {
				return err
			}
			return updateValidation(ctx, scale, oldScale)
		},
		false, options)
	if err != nil {
		return nil, false, err
	}
	scale, err := s.target.scaleOf(obj)
	if err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	return scale, false, nil
}

func (s *scaleREST) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return s.controllers.ConvertToTable(ctx, object, tableOptions)
}

// scaleUpdate turns the stored controller into its Scale, applies the
// request to that, and moves the new replicas (and resourceVersion
// precondition) back into the controller.
type scaleUpdate struct {
	name    string
	request rest.UpdatedObjectInfo
	kinds   rest.GroupVersionKindProvider
	target  scaleTarget
}

func (u *scaleUpdate) Preconditions() *metav1.Preconditions { return u.request.Preconditions() }

func (u *scaleUpdate) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	t := u.target
	obj := oldObj.DeepCopyObject()
	controller, err := meta.Accessor(obj)
	if err != nil || !t.is(obj) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected existing object type to be %s, got %T", t.kind, oldObj))
	}
	if controller.GetResourceVersion() == "" { // the zero object: nothing stored
		return nil, apierrors.NewNotFound(t.subresource(), u.name)
	}
	fields := managedfields.NewScaleHandler(controller.GetManagedFields(), t.groupVersion, t.replicasPath())
	oldScale, err := t.scaleOf(obj)
	if err != nil {
		return nil, err
	}
	if oldScale.ManagedFields, err = fields.ToSubresource(); err != nil {
		return nil, err
	}
	updated, err := u.request.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	if updated == nil {
		return nil, apierrors.NewBadRequest("nil update passed to Scale")
	}
	scale, ok := updated.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", updated))
	}
	if errs := autoscalingvalidation.ValidateScaleUpdate(ctx, internalScale(scale), internalScale(oldScale), legacyscheme.Scheme, u.kinds); len(errs) > 0 {
		return nil, apierrors.NewInvalid(autoscaling.Kind("Scale"), controller.GetName(), errs)
	}
	if scale.UID != "" && scale.UID != controller.GetUID() {
		return nil, apierrors.NewConflict(t.subresource(), controller.GetName(),
			//lint:ignore ST1005 kube-apiserver's own message, word for word
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, controller.GetUID()))
	}
	t.setReplicas(obj, scale.Spec.Replicas)
	controller.SetResourceVersion(scale.ResourceVersion)
	managed, err := fields.ToParent(scale.ManagedFields)
	if err != nil {
		return nil, err
	}
	controller.SetManagedFields(managed)
	return obj, nil
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
