package apiserver

import (
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	// The storage group's internal types, defaults and conversions in the
	// legacy scheme, which its registry strategy uses.
	storageapi "k8s.io/kubernetes/pkg/apis/storage"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	"k8s.io/kubernetes/pkg/registry/storage/csidriver"
	"k8s.io/kubernetes/pkg/registry/storage/csinode"
	"k8s.io/kubernetes/pkg/registry/storage/csistoragecapacity"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattachment"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattributesclass"
)

// storageResources is storage.k8s.io/v1, each kind defaulted and validated
// by upstream's registry strategy and stored under upstream's key, so
// charts, CSI drivers' registrars and tools that write them work. berth
// provisions and attaches no volumes from them yet: nothing acts on a
// CSIDriver, VolumeAttachment or VolumeAttributesClass, as in a cluster
// whose CSI drivers are not installed; the scheduler reads CSINodes and
// capacities as kube-scheduler does.
func storageResources() []*resource {
	storage := storagev1.SchemeGroupVersion
	return []*resource{
		{
			gvr: storage.WithResource("csidrivers"), kind: "CSIDriver", singular: "csidriver",
			newObj: newOf[storagev1.CSIDriver](), newList: newOf[storagev1.CSIDriverList](),
			registry: &registryKind{strategy: csidriver.Strategy, newInternal: func() runtime.Object { return &storageapi.CSIDriver{} }},
		},
		{
			gvr: storage.WithResource("csinodes"), kind: "CSINode", singular: "csinode",
			newObj: newOf[storagev1.CSINode](), newList: newOf[storagev1.CSINodeList](),
			registry: &registryKind{strategy: csinode.Strategy, newInternal: func() runtime.Object { return &storageapi.CSINode{} },
				subresources: map[string]upstreamStrategy{"status": csinode.StatusStrategy}},
			subresources: []string{"status"},
		},
		{
			gvr: storage.WithResource("csistoragecapacities"), kind: "CSIStorageCapacity", singular: "csistoragecapacity", namespaced: true,
			newObj: newOf[storagev1.CSIStorageCapacity](), newList: newOf[storagev1.CSIStorageCapacityList](),
			registry: &registryKind{strategy: csistoragecapacity.Strategy, newInternal: func() runtime.Object { return &storageapi.CSIStorageCapacity{} }},
		},
		{
			gvr: storage.WithResource("volumeattachments"), kind: "VolumeAttachment", singular: "volumeattachment",
			newObj: newOf[storagev1.VolumeAttachment](), newList: newOf[storagev1.VolumeAttachmentList](),
			registry: &registryKind{strategy: volumeattachment.Strategy, newInternal: func() runtime.Object { return &storageapi.VolumeAttachment{} },
				subresources: map[string]upstreamStrategy{"status": volumeattachment.StatusStrategy}},
			subresources: []string{"status"},
		},
		{
			gvr: storage.WithResource("volumeattributesclasses"), kind: "VolumeAttributesClass", singular: "volumeattributesclass",
			shortNames: []string{"vac"},
			newObj:     newOf[storagev1.VolumeAttributesClass](), newList: newOf[storagev1.VolumeAttributesClassList](),
			registry: &registryKind{strategy: volumeattributesclass.Strategy, newInternal: func() runtime.Object { return &storageapi.VolumeAttributesClass{} }},
		},
		{
			gvr: storagev1.SchemeGroupVersion.WithResource("storageclasses"), kind: "StorageClass", singular: "storageclass",
			shortNames: []string{"sc"},
			newObj:     newOf[storagev1.StorageClass](), newList: newOf[storagev1.StorageClassList](),
			registry: &registryKind{strategy: storageclass.Strategy, newInternal: func() runtime.Object { return &storageapi.StorageClass{} }},
		},
	}
}
