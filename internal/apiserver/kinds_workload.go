package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
)

// workloadResources are the core group's pod templates and
// ReplicationControllers, each prepared and validated by upstream's
// registry strategy. A ReplicationController's scale subresource is
// scale.go; upstream's replication manager runs it.
func workloadResources() []*resource {
	core := corev1.SchemeGroupVersion
	return []*resource{
		{
			gvr: core.WithResource("podtemplates"), kind: "PodTemplate", singular: "podtemplate", namespaced: true,
			newObj: newOf[corev1.PodTemplate](), newList: newOf[corev1.PodTemplateList](),
			registry: &registryKind{strategy: podtemplate.Strategy, newInternal: func() runtime.Object { return &api.PodTemplate{} }},
		},
		{
			gvr: core.WithResource("replicationcontrollers"), kind: "ReplicationController", singular: "replicationcontroller",
			shortNames: []string{"rc"}, namespaced: true,
			storagePath: "controllers", // kube-apiserver's key
			newObj:      newOf[corev1.ReplicationController](), newList: newOf[corev1.ReplicationControllerList](),
			rules: kindRules{fields: upstreamFields(func() runtime.Object { return &api.ReplicationController{} }, replicationcontroller.GetAttrs)},
			registry: &registryKind{strategy: replicationcontroller.Strategy, newInternal: func() runtime.Object { return &api.ReplicationController{} },
				subresources: map[string]upstreamStrategy{"status": replicationcontroller.StatusStrategy}},
			subresources: []string{"status", "scale"},
		},
	}
}

// upstreamFields gives a kind's field selectors as upstream's registry
// computes them (its GetAttrs on the internal form), for kinds read rarely
// enough that a conversion per evaluated object costs nothing that matters.
func upstreamFields(newInternal func() runtime.Object, attrs func(runtime.Object) (labels.Set, fields.Set, error)) func(runtime.Object) fields.Set {
	return func(obj runtime.Object) fields.Set {
		in := newInternal()
		if err := legacyscheme.Scheme.Convert(obj, in, nil); err != nil {
			panic(err) // generated conversions of a registered pair do not fail
		}
		_, fs, err := attrs(in)
		if err != nil {
			panic(err) // upstream's GetAttrs fail only on a foreign type
		}
		return fs
	}
}
