package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsapi "k8s.io/kubernetes/pkg/apis/apps"
	// The apps group's internal types, defaults and conversions in the
	// legacy scheme, which upstream's apps strategies use.
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	"k8s.io/kubernetes/pkg/registry/apps/controllerrevision"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
)

// appsResources are apps/v1's workload kinds, each prepared and validated
// by upstream's registry strategy and kept under kube-apiserver's etcd key
// (the resource's name). Their scale subresources are scale.go;
// upstream's controllers (internal/controller/apps) act on them.
func appsResources() []*resource {
	apps := appsv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: apps.WithResource("deployments"), kind: "Deployment", singular: "deployment",
			shortNames: []string{"deploy"}, namespaced: true,
			newObj: newOf[appsv1.Deployment](), newList: newOf[appsv1.DeploymentList](),
			registry: &registryKind{strategy: deployment.Strategy, newInternal: func() runtime.Object { return &appsapi.Deployment{} },
				subresources: map[string]upstreamStrategy{"status": deployment.StatusStrategy}},
			subresources: []string{"status", "scale"},
		},
		{
			gvr: apps.WithResource("replicasets"), kind: "ReplicaSet", singular: "replicaset",
			shortNames: []string{"rs"}, namespaced: true,
			newObj: newOf[appsv1.ReplicaSet](), newList: newOf[appsv1.ReplicaSetList](),
			rules: kindRules{fields: upstreamFields(func() runtime.Object { return &appsapi.ReplicaSet{} }, replicaset.GetAttrs)},
			registry: &registryKind{strategy: replicaset.Strategy, newInternal: func() runtime.Object { return &appsapi.ReplicaSet{} },
				subresources: map[string]upstreamStrategy{"status": replicaset.StatusStrategy}},
			subresources: []string{"status", "scale"},
		},
		{
			gvr: apps.WithResource("statefulsets"), kind: "StatefulSet", singular: "statefulset",
			shortNames: []string{"sts"}, namespaced: true,
			newObj: newOf[appsv1.StatefulSet](), newList: newOf[appsv1.StatefulSetList](),
			registry: &registryKind{strategy: statefulset.Strategy, newInternal: func() runtime.Object { return &appsapi.StatefulSet{} },
				subresources: map[string]upstreamStrategy{"status": statefulset.StatusStrategy}},
			subresources: []string{"status", "scale"},
		},
		{
			gvr: apps.WithResource("daemonsets"), kind: "DaemonSet", singular: "daemonset",
			shortNames: []string{"ds"}, namespaced: true,
			newObj: newOf[appsv1.DaemonSet](), newList: newOf[appsv1.DaemonSetList](),
			registry: &registryKind{strategy: daemonset.Strategy, newInternal: func() runtime.Object { return &appsapi.DaemonSet{} },
				subresources: map[string]upstreamStrategy{"status": daemonset.StatusStrategy}},
			subresources: []string{"status"},
		},
		{
			gvr: apps.WithResource("controllerrevisions"), kind: "ControllerRevision", singular: "controllerrevision", namespaced: true,
			newObj: newOf[appsv1.ControllerRevision](), newList: newOf[appsv1.ControllerRevisionList](),
			registry: &registryKind{strategy: controllerrevision.Strategy, newInternal: func() runtime.Object { return &appsapi.ControllerRevision{} }},
		},
	}
}
