package apiserver

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	// The autoscaling group's internal types, defaults and conversions in
	// the legacy scheme, which its registry strategy and the v1 form use.
	autoscalingapi "k8s.io/kubernetes/pkg/apis/autoscaling"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
)

// autoscalingResources are autoscaling/v2 and v1 HorizontalPodAutoscalers,
// prepared and validated by upstream's registry strategy and stored as
// kube-apiserver stores them: as v2 under one key, v1 converted through
// the internal type (v1 keeps v2's metrics in annotations, as upstream's
// conversion does).
func autoscalingResources() []*resource {
	newInternal := func() runtime.Object { return &autoscalingapi.HorizontalPodAutoscaler{} }
	hpa := func(served *resource) *resource {
		served.kind, served.singular = "HorizontalPodAutoscaler", "horizontalpodautoscaler"
		served.shortNames, served.namespaced = []string{"hpa"}, true
		served.registry = &registryKind{strategy: horizontalpodautoscaler.Strategy, newInternal: newInternal,
			subresources: map[string]upstreamStrategy{"status": horizontalpodautoscaler.StatusStrategy}}
		served.subresources = []string{"status"}
		return served
	}
	return []*resource{
		hpa(&resource{
			gvr:    autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"),
			newObj: newOf[autoscalingv2.HorizontalPodAutoscaler](), newList: newOf[autoscalingv2.HorizontalPodAutoscalerList](),
		}),
		hpa(&resource{
			gvr:    autoscalingv1.SchemeGroupVersion.WithResource("horizontalpodautoscalers"),
			newObj: newOf[autoscalingv1.HorizontalPodAutoscaler](), newList: newOf[autoscalingv1.HorizontalPodAutoscalerList](),
			stored: storedThroughInternal(autoscalingv2.SchemeGroupVersion, newInternal,
				newOf[autoscalingv2.HorizontalPodAutoscaler](), newOf[autoscalingv1.HorizontalPodAutoscaler]()),
		}),
	}
}

// addAutoscalingConversion lets the field manager convert an HPA between
// v1 and v2 (an object written through one version keeps the other's
// managedFields entries), through the internal type as upstream's scheme
// does.
func addAutoscalingConversion(s *runtime.Scheme) error {
	through := func(newInternal func() runtime.Object) conversion.ConversionFunc {
		return func(a, b any, _ conversion.Scope) error {
			in := newInternal()
			if err := legacyscheme.Scheme.Convert(a, in, nil); err != nil {
				return err
			}
			return legacyscheme.Scheme.Convert(in, b, nil)
		}
	}
	internal := func() runtime.Object { return &autoscalingapi.HorizontalPodAutoscaler{} }
	if err := s.AddConversionFunc((*autoscalingv1.HorizontalPodAutoscaler)(nil), (*autoscalingv2.HorizontalPodAutoscaler)(nil), through(internal)); err != nil {
		return fmt.Errorf("registering HPA conversion: %w", err)
	}
	if err := s.AddConversionFunc((*autoscalingv2.HorizontalPodAutoscaler)(nil), (*autoscalingv1.HorizontalPodAutoscaler)(nil), through(internal)); err != nil {
		return fmt.Errorf("registering HPA conversion: %w", err)
	}
	return nil
}
