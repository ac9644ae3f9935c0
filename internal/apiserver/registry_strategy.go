package apiserver

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	// The core group's internal types, defaults and conversions in the
	// legacy scheme, which upstream's registry strategies use.
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

// writeStrategy is what the write path asks of a kind: berth's own rules
// (strategy) or upstream's registry strategy (registryStrategy).
type writeStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
	rest.RESTGracefulDeleteStrategy
	// forSubresource returns the strategy of a status-like subresource.
	forSubresource(name string) writeStrategy
}

// upstreamStrategy is an upstream registry strategy (pkg/registry/...).
type upstreamStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

// registryStrategy runs a kind's create and update through upstream's
// registry strategy, so its defaults, preparation and validation are
// kube-apiserver's own. berth's objects are v1 from the request to the
// store and the watch cache; upstream's strategies take the internal type,
// so this adapter converts here, on the write path only. For the core
// kinds v1 and internal share their layout and a conversion costs about 30
// ns a pod (BenchmarkPodConvertToV1).
type registryStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	upstream    upstreamStrategy
	newInternal func() runtime.Object
	// subresources maps a status-like subresource to upstream's strategy.
	subresources map[string]upstreamStrategy
}

var _ writeStrategy = registryStrategy{}

// forSubresource panics for a subresource the kind names no strategy for:
// routes are registered at start-up, so the mistake cannot outlive a test.
func (s registryStrategy) forSubresource(name string) writeStrategy {
	upstream, ok := s.subresources[name]
	if !ok {
		panic(fmt.Sprintf("apiserver: no upstream strategy for subresource %q", name))
	}
	sub := s
	sub.upstream = upstream
	return sub
}

func (s registryStrategy) NamespaceScoped() bool { return s.upstream.NamespaceScoped() }

// toInternal converts the v1 object berth holds into upstream's internal form.
func (s registryStrategy) toInternal(obj runtime.Object) runtime.Object {
	in := s.newInternal()
	if err := legacyscheme.Scheme.Convert(obj, in, nil); err != nil {
		panic(err) // generated conversions of a registered pair do not fail
	}
	return in
}

// fromInternal writes the internal object back into berth's v1 object.
func fromInternal(in, obj runtime.Object) {
	if err := legacyscheme.Scheme.Convert(in, obj, nil); err != nil {
		panic(err)
	}
}

func (s registryStrategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	// Upstream defaults on decoding a request; berth's handlers decode into
	// its own scheme, so the v1 defaulters run here.
	legacyscheme.Scheme.Default(obj)
	in := s.toInternal(obj)
	s.upstream.PrepareForCreate(ctx, in)
	fromInternal(in, obj)
	// kube-apiserver defaults what it reads back from storage, so what a
	// strategy cleared and the defaults fill (a claim's Pending phase) is
	// in its answer and every read: berth defaults once, here.
	legacyscheme.Scheme.Default(obj)
}

func (s registryStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return s.upstream.Validate(ctx, s.toInternal(obj))
}

func (s registryStrategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	return s.upstream.WarningsOnCreate(ctx, s.toInternal(obj))
}

func (s registryStrategy) Canonicalize(obj runtime.Object) {
	in := s.toInternal(obj)
	s.upstream.Canonicalize(in)
	fromInternal(in, obj)
}

func (s registryStrategy) AllowCreateOnUpdate(ctx context.Context) bool {
	return s.upstream.AllowCreateOnUpdate(ctx)
}

func (s registryStrategy) AllowUnconditionalUpdate(ctx context.Context) bool {
	return s.upstream.AllowUnconditionalUpdate(ctx)
}

func (s registryStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	legacyscheme.Scheme.Default(obj)
	in := s.toInternal(obj)
	s.upstream.PrepareForUpdate(ctx, in, s.toInternal(old))
	fromInternal(in, obj)
	legacyscheme.Scheme.Default(obj) // as PrepareForCreate
}

func (s registryStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return s.upstream.ValidateUpdate(ctx, s.toInternal(obj), s.toInternal(old))
}

func (s registryStrategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return s.upstream.WarningsOnUpdate(ctx, s.toInternal(obj), s.toInternal(old))
}

// DefaultGarbageCollectionPolicy is upstream's strategy's (core/v1
// ReplicationControllers orphan their pods unless told otherwise).
func (s registryStrategy) DefaultGarbageCollectionPolicy(ctx context.Context) rest.GarbageCollectionPolicy {
	if gc, ok := s.upstream.(rest.GarbageCollectionDeleteStrategy); ok {
		return gc.DefaultGarbageCollectionPolicy(ctx)
	}
	return rest.DeleteDependents
}

func (s registryStrategy) CheckGracefulDelete(ctx context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	graceful, ok := s.upstream.(rest.RESTGracefulDeleteStrategy)
	if !ok {
		return false
	}
	return graceful.CheckGracefulDelete(ctx, s.toInternal(obj), options)
}
