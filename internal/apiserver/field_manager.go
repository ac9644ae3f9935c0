package apiserver

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// newFieldManager builds kube-apiserver's managedFields stack for one kind.
//
// Its converter does not copy. The stack converts the live and the new
// object to the kind's version before reading them; berth has no internal
// versions, so that conversion is always to the object's own version,
// where the scheme's converter returns a deep copy of each (two per write,
// ~13% of managedFields' CPU on a pod create). The stack only reads those
// objects, apart from setting their apiVersion and kind, which every
// encoder sets anyway (TestUncopiedConversionRecordsTheSameManagedFields).
//
// Its type converter does not check Go-typed objects against their
// schema (structsUnchecked). Kinds that are only ever request bodies get a
// converter that sees no fields in them (consumedRequestKinds).
//
// resetFields are the fields the kind's strategy resets on this endpoint
// (a main resource's status, a status subresource's spec): as upstream,
// nobody is recorded as managing them there.
func newFieldManager(typeConverter managedfields.TypeConverter, s *runtime.Scheme, kind schema.GroupVersionKind, subresource string, resetFields map[fieldpath.APIVersion]fieldpath.Filter) (*managedfields.FieldManager, error) {
	if consumedRequestKinds[kind] {
		typeConverter = noFields{}
	} else {
		typeConverter = newStructsUnchecked(typeConverter)
	}
	return managedfields.NewDefaultFieldManager(typeConverter, runtime.UnsafeObjectConvertor(s), s, s,
		kind, kind.GroupVersion(), subresource, resetFields)
}

// consumedRequestKinds are kinds posted to a subresource that acts on them
// and answers with a Status: the object is neither stored nor returned, so
// the managedFields the create handler records on it (it always runs the
// field manager) are thrown away unread. Working them out was 2.5% of
// bench/scheduler's CPU (one Binding per pod).
var consumedRequestKinds = map[schema.GroupVersionKind]bool{
	corev1.SchemeGroupVersion.WithKind("Binding"):             true,
	policyv1.SchemeGroupVersion.WithKind("Eviction"):          true,
	corev1.SchemeGroupVersion.WithKind("PodProxyOptions"):     true,
	corev1.SchemeGroupVersion.WithKind("ServiceProxyOptions"): true,
	corev1.SchemeGroupVersion.WithKind("NodeProxyOptions"):    true,
}

// noFields is a TypeConverter to which every object is empty: the field
// manager then records no fields, and walks none.
type noFields struct{}

func (noFields) ObjectToTyped(runtime.Object, ...typed.ValidationOptions) (*typed.TypedValue, error) {
	return typed.DeducedParseableType.FromUnstructured(map[string]any{})
}

func (noFields) TypedToObject(*typed.TypedValue) (runtime.Object, error) {
	return nil, errors.New("request-only kinds cannot be applied")
}

// resetFieldsOf is what r's upstream strategy resets on subresource ("" for
// the main resource), or nil for kinds on berth's own rules and for
// subresources that write another kind (scale, binding).
func resetFieldsOf(r *resource, subresource string) map[fieldpath.APIVersion]fieldpath.Filter {
	if r.registry == nil {
		return nil
	}
	strategy := r.registry.strategy
	if subresource != "" {
		strategy = r.registry.subresources[subresource]
	}
	switch reset := strategy.(type) {
	case rest.ResetFieldsFilterStrategy: // a filter wins, as in upstream's store
		return reset.GetResetFieldsFilter()
	case rest.ResetFieldsStrategy:
		return fieldpath.NewExcludeFilterSetMap(reset.GetResetFields())
	}
	return nil
}
