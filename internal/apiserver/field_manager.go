package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
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
func newFieldManager(typeConverter managedfields.TypeConverter, s *runtime.Scheme, kind schema.GroupVersionKind, subresource string) (*managedfields.FieldManager, error) {
	return managedfields.NewDefaultFieldManager(typeConverter, runtime.UnsafeObjectConvertor(s), s, s,
		kind, kind.GroupVersion(), subresource, nil)
}
