package apiserver

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// writeHooks run around a kind's writes where upstream's generic Store runs
// its BeginCreate, BeginUpdate and AfterDelete hooks, and in the same order:
// begin runs before the strategy prepares and validates, its finish learns
// whether the write was stored (a dry run counts as stored), and afterDelete
// runs once the object is gone from the store. Services allocate and release
// cluster IPs and node ports through them (service_allocation.go).
type writeHooks struct {
	beginCreate func(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions) (finish func(success bool), err error)
	beginUpdate func(ctx context.Context, obj, old runtime.Object, options *metav1.UpdateOptions) (finish func(success bool), err error)
	afterDelete func(obj runtime.Object, options *metav1.DeleteOptions)
}

// forStatus is what a status-like subresource keeps: upstream's status
// stores begin no allocation but still release on delete (a status update
// may remove the last finalizer).
func (h *writeHooks) forStatus() *writeHooks {
	if h == nil {
		return nil
	}
	return &writeHooks{afterDelete: h.afterDelete}
}

// finishNothing is the finish of a write without a begin hook.
func finishNothing(bool) {}

func (h *writeHooks) startCreate(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions) (func(bool), error) {
	if h == nil || h.beginCreate == nil {
		return finishNothing, nil
	}
	return h.beginCreate(ctx, obj, options)
}

func (h *writeHooks) startUpdate(ctx context.Context, obj, old runtime.Object, options *metav1.UpdateOptions) (func(bool), error) {
	if h == nil || h.beginUpdate == nil {
		return finishNothing, nil
	}
	return h.beginUpdate(ctx, obj, old, options)
}

func (h *writeHooks) deleted(obj runtime.Object, options *metav1.DeleteOptions) {
	if h == nil || h.afterDelete == nil {
		return
	}
	h.afterDelete(obj, options)
}
