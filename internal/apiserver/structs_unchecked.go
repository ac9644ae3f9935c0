package apiserver

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// structsUnchecked is a TypeConverter that does not check Go-typed objects
// against their schema, only unstructured ones (server-side apply's
// patches).
//
// The field manager converts the live and the new object of every write.
// Objects of k8s.io/api types have the schema's shape by construction, and
// the field manager runs with duplicates allowed, so the check finds
// nothing in them; the comparison that follows it walks the objects anyway
// and fails on a malformed list just as the check does
// (TestUncheckedStructsRecordTheSameManagedFields). The check is a whole
// reflective walk of each object: ~40% of managedFields' CPU, and ~4% of
// the server's, on a pod create.
type structsUnchecked struct {
	managedfields.TypeConverter
	types sync.Map // GroupVersionKind → typeOf
}

// typeOf is where a kind's type is in the converter's schema.
type typeOf struct {
	schema *smdschema.Schema
	ref    smdschema.TypeRef
}

func newStructsUnchecked(c managedfields.TypeConverter) *structsUnchecked {
	return &structsUnchecked{TypeConverter: c}
}

func (c *structsUnchecked) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return c.TypeConverter.ObjectToTyped(obj, opts...)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	t, known := c.types.Load(gvk)
	if !known {
		// The kind's first object is checked, which finds its type.
		tv, err := c.TypeConverter.ObjectToTyped(obj, opts...)
		if err == nil {
			c.types.Store(gvk, typeOf{schema: tv.Schema(), ref: tv.TypeRef()})
		}
		return tv, err
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, fmt.Errorf("reflecting %v: %w", gvk, err)
	}
	kind := t.(typeOf)
	//lint:ignore SA1019 deprecated because checking became cheap; it is still a whole walk of the object, see the type's comment.
	return typed.AsTypedUnvalidated(v, kind.schema, kind.ref), nil
}
