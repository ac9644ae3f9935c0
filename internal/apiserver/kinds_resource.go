package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	// The resource group's internal types, defaults and conversions in the
	// legacy scheme, which its registry strategies use.
	resourceapi "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	"k8s.io/kubernetes/pkg/registry/resource/deviceclass"
	"k8s.io/kubernetes/pkg/registry/resource/devicetaintrule"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaim"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaimtemplate"
	"k8s.io/kubernetes/pkg/registry/resource/resourceslice"
)

// resourceResources is resource.k8s.io/v1 (dynamic resource allocation),
// each kind defaulted and validated by upstream's registry strategy and
// stored under upstream's key, so DRA drivers can publish their slices and
// users their classes and claims. berth allocates no devices: its scheduler
// leaves a pod that references a claim pending and says why, and nothing
// allocates a claim, as in a cluster with no DRA driver installed.
func resourceResources() []*resource {
	dra := resourcev1.SchemeGroupVersion
	return []*resource{
		{
			gvr: dra.WithResource("deviceclasses"), kind: "DeviceClass", singular: "deviceclass",
			newObj: newOf[resourcev1.DeviceClass](), newList: newOf[resourcev1.DeviceClassList](),
			registry: &registryKind{strategy: deviceclass.Strategy, newInternal: func() runtime.Object { return &resourceapi.DeviceClass{} }},
		},
		{
			gvr: dra.WithResource("devicetaintrules"), kind: "DeviceTaintRule", singular: "devicetaintrule",
			newObj: newOf[resourcev1.DeviceTaintRule](), newList: newOf[resourcev1.DeviceTaintRuleList](),
			// kube-apiserver v1.37 still stores DeviceTaintRules as v1beta2,
			// so that a cluster can be downgraded; so does berth.
			stored: storedThroughInternal(resourcev1beta2.SchemeGroupVersion,
				func() runtime.Object { return &resourceapi.DeviceTaintRule{} },
				newOf[resourcev1beta2.DeviceTaintRule](), newOf[resourcev1.DeviceTaintRule]()),
			registry: &registryKind{strategy: devicetaintrule.Strategy, newInternal: func() runtime.Object { return &resourceapi.DeviceTaintRule{} },
				subresources: map[string]upstreamStrategy{"status": devicetaintrule.StatusStrategy}},
			subresources: []string{"status"},
		},
		{
			gvr: dra.WithResource("resourceclaims"), kind: "ResourceClaim", singular: "resourceclaim", namespaced: true,
			newObj: newOf[resourcev1.ResourceClaim](), newList: newOf[resourcev1.ResourceClaimList](),
			registry: &registryKind{newInternal: func() runtime.Object { return &resourceapi.ResourceClaim{} },
				withConfig: func(deps strategyDeps) (upstreamStrategy, map[string]upstreamStrategy) {
					s := resourceclaim.NewStrategy(storedNamespaces{deps: deps}, deps.authorizer)
					return s, map[string]upstreamStrategy{"status": resourceclaim.NewStatusStrategy(s)}
				}},
			subresources: []string{"status"},
		},
		{
			gvr: dra.WithResource("resourceclaimtemplates"), kind: "ResourceClaimTemplate", singular: "resourceclaimtemplate", namespaced: true,
			newObj: newOf[resourcev1.ResourceClaimTemplate](), newList: newOf[resourcev1.ResourceClaimTemplateList](),
			registry: &registryKind{newInternal: func() runtime.Object { return &resourceapi.ResourceClaimTemplate{} },
				withConfig: func(deps strategyDeps) (upstreamStrategy, map[string]upstreamStrategy) {
					return resourceclaimtemplate.NewStrategy(storedNamespaces{deps: deps}), nil
				}},
		},
		{
			gvr: dra.WithResource("resourceslices"), kind: "ResourceSlice", singular: "resourceslice",
			newObj: newOf[resourcev1.ResourceSlice](), newList: newOf[resourcev1.ResourceSliceList](),
			rules:    kindRules{fields: upstreamFields(func() runtime.Object { return &resourceapi.ResourceSlice{} }, resourceslice.GetAttrs)},
			registry: &registryKind{strategy: resourceslice.Strategy, newInternal: func() runtime.Object { return &resourceapi.ResourceSlice{} }},
			// A node's driver watches its own slices, as upstream indexes them.
			indexFields: []string{resourceapi.ResourceSliceSelectorNodeName},
		},
	}
}

// storedNamespaces is the namespace client upstream's DRA strategies are
// given, over berth's store: they only Get a claim's namespace, to check
// that admin access to devices is asked for in a namespace labelled for
// it. The embedded interface is nil, so any other method panics, which
// would show at once that upstream started using one.
type storedNamespaces struct {
	typedcorev1.NamespaceInterface
	deps strategyDeps
}

func (n storedNamespaces) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Namespace, error) {
	obj, err := n.deps.getClusterScoped(ctx, corev1.SchemeGroupVersion.WithResource("namespaces"), name)
	if err != nil {
		return nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, fmt.Errorf("namespace %s: stored as %T", name, obj)
	}
	return ns, nil
}
