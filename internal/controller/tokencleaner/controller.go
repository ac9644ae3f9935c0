// Package tokencleaner deletes bootstrap-token Secrets (kube-system, type
// bootstrap.kubernetes.io/token) once their expiration has passed, as
// upstream's token cleaner does: a token that no longer authenticates
// should not linger in the store. Each token is looked at when it appears
// or changes and again at its expiry instant (a delaying queue, not a
// periodic scan), so the store is touched only to delete.
package tokencleaner

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/controller/keyloop"
	"github.com/berth/berth/internal/informeropts"
)

// Config is what the cleaner needs.
type Config struct {
	Client kubernetes.Interface
	// Clock tells the time and runs the expiry timers; nil is the real one.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Controller deletes expired bootstrap tokens.
type Controller struct {
	client  kubernetes.Interface
	clock   clock.WithTicker
	secrets corelisters.SecretNamespaceLister
	queue   workqueue.TypedRateLimitingInterface[string]
	start   func(ctx context.Context) bool // starts the informer; false if ctx ended before it synced
	stop    func()
	log     *slog.Logger
}

// New builds the cleaner; Run starts it.
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Only the token Secrets of kube-system: the field selector keeps every
	// other Secret out of the cleaner's memory.
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informeropts.Factory(
		informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()
		}))...)
	informer := factory.Core().V1().Secrets()
	c := &Controller{
		client:  cfg.Client,
		clock:   cfg.Clock,
		secrets: informer.Lister().Secrets(metav1.NamespaceSystem),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "tokencleaner", Clock: cfg.Clock}),
		log: cfg.Logger,
	}
	_, _ = informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	c.start = func(ctx context.Context) bool {
		factory.Start(ctx.Done())
		return cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced)
	}
	c.stop = factory.Shutdown
	return c
}

func (c *Controller) enqueue(obj any) {
	if s, ok := obj.(*corev1.Secret); ok && s.Type == bootstrapapi.SecretTypeBootstrapToken {
		c.queue.Add(s.Name)
	}
}

// Run deletes expired tokens until ctx ends, then stops its informer.
func (c *Controller) Run(ctx context.Context) error {
	defer c.stop()
	defer c.queue.ShutDown()
	if !c.start(ctx) {
		return nil
	}
	keyloop.Run(ctx, c.queue, 1, c.sync, func(_ context.Context, name string, err error) bool {
		c.log.Warn("bootstrap token cleanup failed; retrying", "secret", name, "err", err)
		return true
	})
	return nil
}

// sync deletes the token if it has expired, or looks at it again at its
// expiry instant. A token without an expiration is kept for good.
func (c *Controller) sync(ctx context.Context, name string) error {
	s, err := c.secrets.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read secret %s: %w", name, err)
	}
	remaining, expired := bootstrapsecretutil.GetExpiration(s, c.clock.Now())
	if !expired {
		if remaining > 0 {
			c.queue.AddAfter(name, remaining)
		}
		return nil
	}
	return c.delete(ctx, s)
}

// delete removes the token, but only the very Secret judged expired: the UID
// precondition keeps a token re-created under the same name.
func (c *Controller) delete(ctx context.Context, s *corev1.Secret) error {
	uid := s.UID
	err := c.client.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil // already gone, or replaced: the replacement has its own event
	case err != nil:
		return fmt.Errorf("delete expired token %s: %w", s.Name, err)
	}
	c.log.Info("deleted an expired bootstrap token", "secret", s.Name,
		"expiration", bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenExpirationKey))
	return nil
}
