package apiserver

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReadView decides how the requester in ctx sees objects of resource gr it
// reads: it returns a function applied to each object served, or nil to
// serve them as stored. Served objects are shared (the watch cache's), so
// the function must not modify its argument: it returns the object itself
// or a changed copy.
type ReadView func(ctx context.Context, gr schema.GroupResource) func(runtime.Object) runtime.Object

func (s *objectStore) viewFor(ctx context.Context) func(runtime.Object) runtime.Object {
	if s.readView == nil {
		return nil
	}
	return s.readView(ctx, s.groupResource())
}

// viewObjects applies view to every object, in a new slice.
func viewObjects(view func(runtime.Object) runtime.Object, objs []runtime.Object) []runtime.Object {
	if view == nil {
		return objs
	}
	out := make([]runtime.Object, len(objs))
	for i, obj := range objs {
		out[i] = view(obj)
	}
	return out
}
