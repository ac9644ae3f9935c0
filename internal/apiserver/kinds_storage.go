package apiserver

import (
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	// The storage group's internal types, defaults and conversions in the
	// legacy scheme, which its registry strategy uses.
	storageapi "k8s.io/kubernetes/pkg/apis/storage"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
)

// storageResources is what berth stores of storage.k8s.io/v1:
// StorageClasses, defaulted and validated by upstream's registry strategy,
// so charts and tools that create classes work. berth provisions no
// volumes from them yet; the group's other kinds are empty collections.
func storageResources() []*resource {
	return []*resource{
		{
			gvr: storagev1.SchemeGroupVersion.WithResource("storageclasses"), kind: "StorageClass", singular: "storageclass",
			shortNames: []string{"sc"},
			newObj:     newOf[storagev1.StorageClass](), newList: newOf[storagev1.StorageClassList](),
			registry: &registryKind{strategy: storageclass.Strategy, newInternal: func() runtime.Object { return &storageapi.StorageClass{} }},
		},
	}
}
