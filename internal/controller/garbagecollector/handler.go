package garbagecollector

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// handler feeds one resource's informer events into the graph and queues
// the objects whose state may have changed.
func (c *Controller) handler(r collectable) cache.ResourceEventHandler {
	upsert := func(obj any) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return
		}
		c.enqueue(c.graph.upsert(toNode(r.resource, r.kind, m)))
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				c.enqueue(c.graph.remove(m.UID))
			}
		},
	}
}

func (c *Controller) enqueue(uids []types.UID) {
	for _, uid := range uids {
		c.queue.Add(uid)
	}
}
