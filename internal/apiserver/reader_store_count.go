package apiserver

import (
	"context"
	"time"

	apistorage "k8s.io/apiserver/pkg/storage"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/berth/berth/internal/store"
)

// objectCountPeriod is how often a resource without a watch cache is
// counted, as kube-apiserver's storage counts each resource every minute
// for API priority and fairness.
const objectCountPeriod = time.Minute

// recount reads the resource's object count from the store (a one-key range
// that also counts the rest).
func (r *storeReader) recount(ctx context.Context) {
	page, err := r.spec.Store.List(ctx, r.spec.Prefix, store.ListOptions{Limit: 1})
	if err != nil {
		if ctx.Err() == nil && r.spec.Logger != nil {
			r.spec.Logger.Debug("counting objects", "err", err)
		}
		return
	}
	r.count.Store(page.Count)
}

// ObjectStats implements objectCounter with the count alone, as
// kube-apiserver's storage reports a resource whose object sizes it does
// not track: the work estimate then assumes the largest objects.
func (r *storeReader) ObjectStats() (apistorage.Stats, error) {
	n := r.count.Load()
	if n < 0 {
		return apistorage.Stats{}, flowcontrolrequest.ObjectCountNotFoundErr
	}
	return apistorage.Stats{ObjectCount: n}, nil
}
