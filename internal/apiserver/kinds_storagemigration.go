package apiserver

import (
	svmv1 "k8s.io/api/storagemigration/v1"
	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	// The storagemigration group's internal types, defaults and
	// conversions in the legacy scheme, which its registry strategy uses.
	svmapi "k8s.io/kubernetes/pkg/apis/storagemigration"
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install"
	"k8s.io/kubernetes/pkg/registry/storagemigration/storagemigration"
)

// storageMigrationResources is storagemigration.k8s.io/v1's
// StorageVersionMigrations (+status), defaulted and validated by upstream's
// registry strategy and stored as kube-apiserver v1.37 stores them: under
// its key, as v1beta1 (v1 is new, and the storage version lags a release
// so that a cluster can be downgraded).
func storageMigrationResources() []*resource {
	newInternal := func() runtime.Object { return &svmapi.StorageVersionMigration{} }
	return []*resource{{
		gvr:  svmv1.SchemeGroupVersion.WithResource("storageversionmigrations"),
		kind: "StorageVersionMigration", singular: "storageversionmigration",
		newObj: newOf[svmv1.StorageVersionMigration](), newList: newOf[svmv1.StorageVersionMigrationList](),
		stored: storedThroughInternal(svmv1beta1.SchemeGroupVersion, newInternal,
			newOf[svmv1beta1.StorageVersionMigration](), newOf[svmv1.StorageVersionMigration]()),
		registry: &registryKind{strategy: storagemigration.Strategy, newInternal: newInternal,
			subresources: map[string]upstreamStrategy{"status": storagemigration.StatusStrategy}},
		subresources: []string{"status"},
	}}
}
