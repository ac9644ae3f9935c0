package garbagecollector

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// sync brings one object in line with its owners and its own deletion
// finalizers. It reads the graph afresh, so a retried item acts on the
// latest state.
func (c *Controller) sync(ctx context.Context, uid types.UID) error {
	n, ok := c.graph.get(uid)
	switch {
	case !ok:
		return nil
	case n.orphaning():
		return c.orphan(ctx, n)
	case n.deletingDependents():
		return c.deleteDependentsFirst(ctx, n)
	case n.deleting || len(n.owners) == 0:
		return nil // already going, or owned by nobody
	}
	return c.collect(ctx, n)
}

// collect deletes a dependent whose owners are all gone (or all waiting
// for it), or drops the references to such owners while another lives.
func (c *Controller) collect(ctx context.Context, dep node) error {
	states := make(map[types.UID]ownerState, len(dep.owners))
	for _, ref := range dep.owners {
		state, err := c.resolver.ownerState(ctx, ref, dep.namespace)
		if err != nil {
			return err
		}
		switch {
		case state == ownerInvalid:
			c.event(dep, corev1.EventTypeWarning, "OwnerRefInvalidNamespace",
				fmt.Sprintf("ownerRef %s %s (uid %s) is namespaced and cannot own a cluster-scoped object", ref.Kind, ref.Name, ref.UID))
		case state == ownerDangling && c.resolver.inOtherNamespace(ref, dep.namespace):
			c.event(dep, corev1.EventTypeWarning, "OwnerRefInvalidNamespace",
				fmt.Sprintf("ownerRef %s %s (uid %s) does not resolve in namespace %s", ref.Kind, ref.Name, ref.UID, dep.namespace))
		}
		states[ref.UID] = state
	}
	dependents := c.graph.dependentsOf(dep)
	v := decide(dep, states, len(dependents) > 0)
	switch {
	case v.delete:
		if v.waiting && slices.ContainsFunc(dependents, node.deletingDependents) {
			// A dependency circle: an owner waits for dep, and dep would wait
			// for a dependent that already waits in turn. As upstream, dep's
			// references stop blocking their owners first, which breaks it.
			c.log.Info("unblocking owners: a dependency circle", "resource", dep.resource.Resource, "namespace", dep.namespace, "name", dep.name, "uid", dep.uid)
			if err := c.writer.unblockOwners(ctx, dep); err != nil {
				return err
			}
		}
		c.log.Info("deleting dependent: no owner left alive", "waitingOwners", v.waiting, "resource", dep.resource.Resource, "namespace", dep.namespace, "name", dep.name, "uid", dep.uid, "propagation", v.policy)
		return c.writer.delete(ctx, dep, v.policy)
	case len(v.remove) > 0:
		c.log.Info("dropping references to gone owners", "resource", dep.resource.Resource, "namespace", dep.namespace, "name", dep.name, "owners", v.remove)
		return c.writer.removeOwners(ctx, dep, v.remove)
	}
	return nil
}

// deleteDependentsFirst serves a foreground deletion: every dependent is
// queued (collect sees this owner waiting and deletes it), and the owner's
// finalizer goes once no dependent that blocks owner deletion is left.
// Removals of dependents bring the owner back to the queue.
func (c *Controller) deleteDependentsFirst(ctx context.Context, owner node) error {
	deps := c.graph.dependentsOf(owner)
	for _, dep := range deps {
		if !dep.deleting {
			c.queue.Add(dep.uid)
		}
	}
	if blocking := blockingDependents(owner, deps); len(blocking) > 0 {
		c.log.Debug("foreground deletion waits for dependents", "resource", owner.resource.Resource, "namespace", owner.namespace, "name", owner.name, "blocking", len(blocking))
		return nil
	}
	c.log.Info("dependents gone, finishing foreground deletion", "resource", owner.resource.Resource, "namespace", owner.namespace, "name", owner.name)
	return c.writer.removeFinalizer(ctx, owner, metav1.FinalizerDeleteDependents)
}

// orphan releases every dependent of owner, then owner's orphan finalizer.
func (c *Controller) orphan(ctx context.Context, owner node) error {
	for _, dep := range c.graph.dependentsOf(owner) {
		if err := c.writer.removeOwners(ctx, dep, []types.UID{owner.uid}); err != nil {
			return fmt.Errorf("orphan %s %s/%s: %w", dep.resource.Resource, dep.namespace, dep.name, err)
		}
	}
	c.log.Info("dependents orphaned", "resource", owner.resource.Resource, "namespace", owner.namespace, "name", owner.name)
	return c.writer.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
}
