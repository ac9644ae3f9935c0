package informeropts

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
)

// mapperReset is how often kube-controller-manager forgets the discovery
// its REST mapper caches, so kinds served later are found.
const mapperReset = 30 * time.Second

// ScaleClient is what controllers that scale any kind with a scale
// subresource use, as kube-controller-manager's controller context gives
// them: a REST mapper over cached discovery (reset with ResetMapper) and a
// scale client whose kind resolver asks the server itself.
func ScaleClient(cfg *rest.Config, disc discovery.DiscoveryInterface) (*restmapper.DeferredDiscoveryRESTMapper, scale.ScalesGetter, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
	if err != nil {
		return nil, nil, fmt.Errorf("scale client: %w", err)
	}
	return mapper, scales, nil
}

// ResetMapper is a loop for RunControllers that forgets mapper's cached
// discovery every 30 seconds until ctx ends.
func ResetMapper(mapper *restmapper.DeferredDiscoveryRESTMapper) func(context.Context) {
	return func(ctx context.Context) { wait.Until(mapper.Reset, mapperReset, ctx.Done()) }
}
