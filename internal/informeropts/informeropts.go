// Package informeropts holds what every informer inside berth server shares:
// the scheduler's, the controllers' and the node authorizer's caches each
// keep their own copy of what they watch, except those that read through
// to the watch cache (ReadThrough) and share its objects.
package informeropts

import (
	"context"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Factory is the option set for a server component's informer factory,
// followed by the component's own options.
func Factory(own ...informers.SharedInformerOption) []informers.SharedInformerOption {
	return append([]informers.SharedInformerOption{informers.WithTransform(StripManagedFields)}, own...)
}

// StripManagedFields drops metadata.managedFields from an object as an
// informer stores it, as kube-controller-manager's informers do: no
// in-process consumer reads them, and they are a third to a half of a
// typical pod's decoded size, held once per informer. An update built from
// a cached object leaves the stored managedFields as they are, since the
// API server keeps them when a request carries none. It changes the
// object it is given, so it is only for objects decoded for the informer.
func StripManagedFields(obj any) (any, error) {
	if acc, err := meta.Accessor(obj); err == nil && acc.GetManagedFields() != nil {
		acc.SetManagedFields(nil)
	}
	return obj, nil
}

// ReadThrough makes factory's informer of obj's type list and watch through
// lw instead of the factory's client (nil lw: no change). The informer
// indexes by namespace, as client-go's typed informers do, so their listers
// work unchanged.
//
// It must come before anything asks the factory for that informer: the
// factory would have made it over its client already, and it would decode
// and keep a copy of its own of every object (or, made by an earlier
// ReadThrough, it would ignore lw). That is a bug in the caller, so it
// panics, at start-up, rather than cost memory and CPU unseen.
//
// lw hands out the watch cache's own objects (apiserver.LocalReads), so the
// informer gets no transform from the factory: StripManagedFields would
// change the objects every other reader sees, and keeping them costs the
// informer nothing the cache does not hold already. A component may still
// set a transform that builds new objects from them.
func ReadThrough(factory informers.SharedInformerFactory, obj runtime.Object, lw cache.ListerWatcher) {
	if lw == nil {
		return
	}
	made := false // InformerFor calls the constructor only for a type it lacks
	informer := factory.InformerFor(obj, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		made = true
		return cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
	if !made {
		panic(fmt.Sprintf("informeropts.ReadThrough: the factory has its %T informer already", obj))
	}
	if err := informer.SetTransform(nil); err != nil {
		// Only if called after the informer started: a bug in the caller.
		panic(fmt.Sprintf("informeropts.ReadThrough on a started informer: %v", err))
	}
}

// Workers is one controller's Run with its worker count, for RunControllers.
func Workers(run func(ctx context.Context, workers int), n int) func(context.Context) {
	return func(ctx context.Context) { run(ctx, n) }
}

// RunControllers starts factory's informers, waits for their caches, then
// runs every controller until ctx ends, as kube-controller-manager runs
// upstream's controllers over its shared informers. A cache that has not
// synced when ctx ends is logged, and nothing runs.
func RunControllers(ctx context.Context, factory informers.SharedInformerFactory, logger *slog.Logger, controllers ...func(context.Context)) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			logger.Warn("informer did not sync before the context ended", "type", typ.String())
			return nil
		}
	}
	var wg sync.WaitGroup
	for _, run := range controllers {
		wg.Go(func() { run(ctx) })
	}
	wg.Wait()
	return nil
}

// ControllerConfig is what each of upstream's controllers the server runs
// is given: the client its informers list and watch with (the controller
// manager's own identity, as kube-controller-manager's shared informers),
// the clients it acts with, its logger, and where its pod and node
// informers list and watch (the API server's watch cache, whose objects
// they then share; nil: through Client).
type ControllerConfig struct {
	Client kubernetes.Interface
	// Clients gives each controller its own identity; nil: every
	// controller acts with Client.
	Clients Clients
	Logger  *slog.Logger
	Pods    cache.ListerWatcher
	Nodes   cache.ListerWatcher
}

// Clients builds the client each of upstream's controllers acts with,
// named as kube-controller-manager names the controller's service account
// under --use-service-account-credentials ("deployment-controller"), so
// that the controller holds what its system:controller: role grants and
// no more. Upstream's clientbuilder.ControllerClientBuilder satisfies it.
type Clients interface {
	Config(name string) (*rest.Config, error)
	Client(name string) (kubernetes.Interface, error)
}

// ClientFor is the client the controller called name acts with.
func (c ControllerConfig) ClientFor(name string) (kubernetes.Interface, error) {
	if c.Clients == nil {
		return c.Client, nil
	}
	client, err := c.Clients.Client(name)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", name, err)
	}
	return client, nil
}

// ClientsFor is ClientFor of each name, in order.
func (c ControllerConfig) ClientsFor(names ...string) ([]kubernetes.Interface, error) {
	clients := make([]kubernetes.Interface, len(names))
	for i, name := range names {
		var err error
		if clients[i], err = c.ClientFor(name); err != nil {
			return nil, err
		}
	}
	return clients, nil
}

// NewFactory is one controller's informer factory, its pods and nodes read
// through c.Pods and c.Nodes.
func (c ControllerConfig) NewFactory() informers.SharedInformerFactory {
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, Factory()...)
	ReadThrough(factory, &corev1.Pod{}, c.Pods)
	ReadThrough(factory, &corev1.Node{}, c.Nodes)
	return factory
}
