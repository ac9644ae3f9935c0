// Package informeropts holds what every informer inside berth server shares:
// the scheduler's, the controllers' and the node authorizer's caches each
// keep their own copy of what they watch (of pods, a shallow copy of the
// watch cache's object: ReadThrough).
package informeropts

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
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
// API server keeps them when a request carries none. It resets only the
// top-level field, so it is safe on shallow copies of shared objects.
func StripManagedFields(obj any) (any, error) {
	if acc, err := meta.Accessor(obj); err == nil && acc.GetManagedFields() != nil {
		acc.SetManagedFields(nil)
	}
	return obj, nil
}

// ReadThrough makes factory's informer of obj's type list and watch through
// lw instead of the factory's client (nil lw: no change). Call it before
// the informer is first asked for. The informer indexes by namespace, as
// client-go's typed informers do, so their listers work unchanged.
func ReadThrough(factory informers.SharedInformerFactory, obj runtime.Object, lw cache.ListerWatcher) {
	if lw == nil {
		return
	}
	factory.InformerFor(obj, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
}
