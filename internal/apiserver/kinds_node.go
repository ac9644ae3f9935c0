package apiserver

import (
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/runtime"
	// The node group's internal types, defaults and conversions in the
	// legacy scheme, which its registry strategy uses.
	nodeapi "k8s.io/kubernetes/pkg/apis/node"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	"k8s.io/kubernetes/pkg/registry/node/runtimeclass"
)

// nodeResources is node.k8s.io/v1: RuntimeClasses, defaulted and validated
// by upstream's registry strategy. The RuntimeClass admission plugin copies
// a class's overhead and scheduling into the pods naming it; the agent
// resolves the class to the runtime handler its sandbox runs with.
func nodeResources() []*resource {
	return []*resource{
		{
			gvr: nodev1.SchemeGroupVersion.WithResource("runtimeclasses"), kind: "RuntimeClass", singular: "runtimeclass",
			newObj: newOf[nodev1.RuntimeClass](), newList: newOf[nodev1.RuntimeClassList](),
			registry: &registryKind{strategy: runtimeclass.Strategy, newInternal: func() runtime.Object { return &nodeapi.RuntimeClass{} }},
		},
	}
}
