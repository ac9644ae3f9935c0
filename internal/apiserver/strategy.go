package apiserver

import (
	"context"
	"reflect"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
)

// kindRules is what differs between kinds: the rest of the create, update
// and delete flow is shared (strategy below) and driven by k8s.io/apiserver's
// rest.BeforeCreate/BeforeUpdate/BeforeDelete. Nil hooks do nothing.
type kindRules struct {
	// name validates metadata.name (nil: DNS subdomain, upstream's default).
	name apivalidation.ValidateNameFunc
	// defaults fills in what the user left out, on create and update, as
	// upstream's generated defaulters do for the served fields.
	defaults func(obj runtime.Object)
	// prepareForCreate clears or sets server-owned fields (e.g. status); ctx
	// carries the requesting user.
	prepareForCreate func(ctx context.Context, obj runtime.Object)
	// prepareForUpdate adjusts a main-resource update after the status
	// split (pods: bump generation when the spec changed).
	prepareForUpdate func(obj, old runtime.Object)
	// validate checks the kind's own fields (metadata is checked generically).
	validate func(obj runtime.Object) field.ErrorList
	// validateUpdate checks a change against the stored object (immutability).
	validateUpdate func(obj, old runtime.Object) field.ErrorList
	// fields returns the values of the kind's field selectors.
	fields func(obj runtime.Object) fields.Set
	// hasStatus splits spec and status: the main resource ignores status
	// changes and the status subresource changes only status.
	hasStatus bool
	// statusUpdate narrows what a status-like subresource may change
	// (certificatesigningrequests/approval: only the conditions).
	statusUpdate func(subresource string, obj, old runtime.Object)
	// partUpdates are the subresources that change one part of the object
	// other than status (namespaces/finalize: spec.finalizers), by name.
	partUpdates map[string]partUpdate
	// allowCreateOnUpdate lets PUT create a missing object (events, leases).
	allowCreateOnUpdate bool
}

// partUpdate is a subresource's update rules: prepare makes obj carry only
// the change the subresource may make to old; validate checks that part.
type partUpdate struct {
	prepare  func(obj, old runtime.Object)
	validate func(obj runtime.Object) field.ErrorList
}

// strategy adapts kindRules to k8s.io/apiserver's rest strategy interfaces.
// forStatus selects the status-like subresource's update rules;
// subresource names it.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	rules       kindRules
	namespaced  bool
	forStatus   bool
	subresource string
}

var _ writeStrategy = strategy{}

func (s strategy) forSubresource(name string) writeStrategy {
	s.forStatus = true
	s.subresource = name
	return s
}

func (s strategy) NamespaceScoped() bool { return s.namespaced }

func (s strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	if s.rules.hasStatus {
		resetStatus(obj)
	}
	if s.rules.defaults != nil {
		s.rules.defaults(obj)
	}
	if s.rules.prepareForCreate != nil {
		s.rules.prepareForCreate(ctx, obj)
	}
}

func (s strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	errs := s.validateMeta(obj)
	if s.rules.validate != nil {
		errs = append(errs, s.rules.validate(obj)...)
	}
	return errs
}

func (s strategy) validateMeta(obj runtime.Object) field.ErrorList {
	accessor, ok := obj.(metav1.Object)
	if !ok {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), errNoMeta(obj))}
	}
	nameFn := s.rules.name
	if nameFn == nil {
		nameFn = apivalidation.NameIsDNSSubdomain
	}
	return apivalidation.ValidateObjectMetaAccessor(accessor, s.namespaced, nameFn, field.NewPath("metadata"))
}

func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (strategy) Canonicalize(runtime.Object)                               {}

func (s strategy) AllowCreateOnUpdate(context.Context) bool {
	return s.rules.allowCreateOnUpdate && !s.forStatus
}

// AllowUnconditionalUpdate lets a PUT without resourceVersion overwrite, as
// upstream allows for every built-in kind.
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (s strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	part, isPart := s.rules.partUpdates[s.subresource]
	switch {
	case s.forStatus && isPart:
		part.prepare(obj, old)
		return
	case s.forStatus:
		keepOnlyStatusChange(obj, old)
		if s.rules.statusUpdate != nil {
			s.rules.statusUpdate(s.subresource, obj, old)
		}
		return // defaults are already in place in the stored spec
	case s.rules.hasStatus:
		copyStatus(obj, old)
	}
	if s.rules.defaults != nil {
		s.rules.defaults(obj)
	}
	if s.rules.prepareForUpdate != nil {
		s.rules.prepareForUpdate(obj, old)
	}
}

func (s strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	newMeta, ok1 := obj.(metav1.Object)
	oldMeta, ok2 := old.(metav1.Object)
	if !ok1 || !ok2 {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), errNoMeta(obj))}
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(newMeta, oldMeta, field.NewPath("metadata"))
	if part, ok := s.rules.partUpdates[s.subresource]; s.forStatus && ok {
		return append(errs, part.validate(obj)...)
	}
	if s.forStatus {
		return errs
	}
	errs = append(errs, s.Validate(context.Background(), obj)...)
	if s.rules.validateUpdate != nil {
		errs = append(errs, s.rules.validateUpdate(obj, old)...)
	}
	return errs
}

func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// CheckGracefulDelete: deletion is immediate for every kind on berth's own
// rules; pods, the graceful kind, are on upstream's strategy.
func (strategy) CheckGracefulDelete(context.Context, runtime.Object, *metav1.DeleteOptions) bool {
	return false
}

// The status split works on every kind that has a Status field, through
// reflection, so that each kind does not repeat the same three copies.

func statusField(obj runtime.Object) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName("Status")
}

// resetStatus clears status on create: status is the server's and the agents' to write.
func resetStatus(obj runtime.Object) {
	if f := statusField(obj); f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
}

// copyStatus makes obj carry old's status: the main resource ignores status changes.
func copyStatus(obj, old runtime.Object) {
	dst, src := statusField(obj), statusField(old)
	if dst.IsValid() && src.IsValid() && dst.CanSet() {
		dst.Set(src)
	}
}

// keepOnlyStatusChange makes obj equal to old except for its status and the
// metadata a status writer may touch (labels, annotations, resourceVersion)
// or the field manager records (managedFields, with the writer's entry for
// the subresource, as upstream keeps): the status subresource changes only
// status.
func keepOnlyStatusChange(obj, old runtime.Object) {
	newMeta, ok := obj.(metav1.Object)
	status := statusField(obj)
	if !ok || !status.IsValid() {
		return
	}
	saved := reflect.New(status.Type()).Elem()
	saved.Set(status)
	labels, annotations, rv := newMeta.GetLabels(), newMeta.GetAnnotations(), newMeta.GetResourceVersion()
	managed := newMeta.GetManagedFields()
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(old.DeepCopyObject()).Elem())
	statusField(obj).Set(saved)
	newMeta.SetLabels(labels)
	newMeta.SetAnnotations(annotations)
	newMeta.SetResourceVersion(rv)
	newMeta.SetManagedFields(managed)
}
