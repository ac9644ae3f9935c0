// Package informeropts holds what every informer inside berth server shares:
// the scheduler's, the controllers' and the node authorizer's caches each
// keep their own decoded copy of what they watch.
package informeropts

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
)

// Factory is the option set for a server component's informer factory,
// followed by the component's own options.
func Factory(own ...informers.SharedInformerOption) []informers.SharedInformerOption {
	return append([]informers.SharedInformerOption{informers.WithTransform(StripManagedFields)}, own...)
}

// StripManagedFields drops metadata.managedFields from an object as an
// informer stores it, as kube-controller-manager's informers do: no
// in-process consumer reads them, and they are a third to a half of a
// typical pod's decoded size, held once per informer. An update built from
// a cached object leaves the stored managedFields as they are, since the
// API server keeps them when a request carries none.
func StripManagedFields(obj any) (any, error) {
	if acc, err := meta.Accessor(obj); err == nil && acc.GetManagedFields() != nil {
		acc.SetManagedFields(nil)
	}
	return obj, nil
}
