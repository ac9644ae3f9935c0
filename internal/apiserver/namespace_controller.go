package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// namespaceController gives every active namespace its "default"
// ServiceAccount (upstream's ServiceAccount controller) and finishes
// namespace deletion: it deletes everything in a Terminating namespace (pods
// gracefully, as any delete), and once nothing is left finalizes it: the
// namespace goes when no metadata finalizer (a delete propagation policy's,
// see namespacePropagation) holds it any more.
type namespaceController struct {
	namespaces      *namespaceREST
	serviceAccounts *resourceREST
	contents        []*resourceREST // every namespaced resource
	wakeCh          chan struct{}
	resync          time.Duration
	logger          *slog.Logger
}

func newNamespaceController(logger *slog.Logger) *namespaceController {
	return &namespaceController{wakeCh: make(chan struct{}, 1), resync: 5 * time.Second, logger: logger}
}

func (c *namespaceController) wake() {
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
}

// run works until ctx ends; it is owned by the server's context.
func (c *namespaceController) run(ctx context.Context) {
	ticker := time.NewTicker(c.resync)
	defer ticker.Stop()
	for {
		if err := c.sweep(ctx); err != nil && ctx.Err() == nil {
			c.logger.Warn("namespace sweep", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wakeCh:
		case <-ticker.C:
		}
	}
}

func (c *namespaceController) sweep(ctx context.Context) error {
	ctx = withObjectNamespace(ctx, "")
	list, err := c.namespaces.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	for i := range list.(*corev1.NamespaceList).Items {
		ns := &list.(*corev1.NamespaceList).Items[i]
		if ns.Status.Phase != corev1.NamespaceTerminating {
			if err := c.ensureDefaultServiceAccount(ctx, ns.Name); err != nil && ctx.Err() == nil {
				c.logger.Warn("default service account", "namespace", ns.Name, "err", err)
			}
			continue
		}
		if err := c.finish(ctx, ns.Name); err != nil && ctx.Err() == nil {
			c.logger.Warn("finishing namespace deletion", "namespace", ns.Name, "err", err)
		}
	}
	return nil
}

// finish deletes the namespace's contents; when none remain it removes the
// namespace itself.
func (c *namespaceController) finish(ctx context.Context, name string) error {
	nsCtx := withObjectNamespace(ctx, name)
	remaining := 0
	for _, r := range c.contents {
		_, err := r.DeleteCollection(nsCtx, nil, &metav1.DeleteOptions{}, &metainternalversion.ListOptions{})
		if err != nil {
			return fmt.Errorf("deleting %s: %w", r.res.gvr.Resource, err)
		}
		left, err := r.List(nsCtx, &metainternalversion.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing %s: %w", r.res.gvr.Resource, err)
		}
		if n := meta.LenList(left); n > 0 {
			remaining += n
		}
	}
	if remaining > 0 {
		return nil // graceful deletions and finalizers still pending: next sweep
	}
	obj, rev, err := c.namespaces.get(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	deleted, err := c.namespaces.finalize(ctx, obj.(*corev1.Namespace), rev)
	switch {
	case errors.Is(err, errRetryUpdate):
		c.wake() // it changed under us (the garbage collector, a finalizer's owner): look again
		return nil
	case err != nil:
		return err
	case deleted:
		c.logger.Info("namespace deleted", "namespace", name)
	}
	return nil
}

// ensureDefaultServiceAccount creates the namespace's "default"
// ServiceAccount unless the cache already has it.
func (c *namespaceController) ensureDefaultServiceAccount(ctx context.Context, namespace string) error {
	sa := c.serviceAccounts
	_, _, err := sa.reader.Get(ctx, sa.res.key(namespace, "default"), 0)
	if !apierrors.IsNotFound(err) {
		return err
	}
	obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace}}
	_, err = sa.Create(withObjectNamespace(ctx, namespace), obj, nil, &metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) { // raced a create, or the namespace began terminating
		return nil
	}
	return err
}
