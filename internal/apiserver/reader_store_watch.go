package apiserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/watchcache"
)

// Watch streams the collection's changes after q.ResourceVersion. With no
// resourceVersion (or "0"), or when sendInitialEvents asks for it, the
// stream first replays the current state as ADDED events; with
// sendInitialEvents and bookmarks it then marks the end of that replay with
// the k8s.io/initial-events-end bookmark, as client-go's watch-list expects.
func (r *storeReader) Watch(ctx context.Context, q watchcache.WatchOptions) (watch.Interface, error) {
	initial := q.ResourceVersion == "" || q.ResourceVersion == "0"
	if q.SendInitialEvents != nil {
		initial = *q.SendInitialEvents
	}
	var (
		fromRev  int64
		replay   []runtime.Object
		bookmark runtime.Object
		err      error
	)
	switch {
	case initial:
		var initialList watchcache.ListResult
		initialList, err = r.List(ctx, watchcache.ListOptions{Namespace: q.Namespace, Label: q.Label, Field: q.Field})
		if err != nil {
			return nil, err
		}
		replay, fromRev = initialList.Objects, initialList.Revision
		if q.SendInitialEvents != nil && q.AllowBookmarks {
			bookmark, err = r.initialEventsEnd(fromRev)
		}
	case q.ResourceVersion == "" || q.ResourceVersion == "0":
		fromRev, err = r.spec.Store.CurrentRevision(ctx)
	default:
		fromRev, err = strconv.ParseInt(q.ResourceVersion, 10, 64)
		if err != nil || fromRev < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", q.ResourceVersion))
		}
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	prefix := r.spec.Prefix
	if q.Namespace != "" {
		prefix += q.Namespace + "/"
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &storeWatcher{reader: r, q: q, result: make(chan watch.Event), cancel: cancel}
	go w.run(wctx, r.spec.Store.Watch(wctx, prefix, fromRev), replay, bookmark)
	return w, nil
}

func (r *storeReader) initialEventsEnd(rev int64) (runtime.Object, error) {
	obj := r.spec.NewObj()
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	accessor.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return obj, nil
}

// storeWatcher turns one store watch into Kubernetes watch events. Its
// goroutine is owned by the watcher: Stop (or the request ending) ends it.
type storeWatcher struct {
	reader *storeReader
	q      watchcache.WatchOptions
	result chan watch.Event
	cancel context.CancelFunc
}

func (w *storeWatcher) Stop()                          { w.cancel() }
func (w *storeWatcher) ResultChan() <-chan watch.Event { return w.result }

func (w *storeWatcher) run(ctx context.Context, events <-chan store.WatchResult, replay []runtime.Object, bookmark runtime.Object) {
	defer close(w.result)
	defer w.cancel()
	for _, obj := range replay {
		if !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	if bookmark != nil && !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bookmark}) {
		return
	}
	if w.q.Initialized != nil {
		w.q.Initialized()
	}
	for batch := range events {
		if batch.Err != nil {
			w.send(ctx, errorEvent(batch.Err))
			return
		}
		for _, ev := range batch.Events {
			out, ok, err := w.translate(ev)
			if err != nil {
				w.send(ctx, errorEvent(err))
				return
			}
			if ok && !w.send(ctx, out) {
				return
			}
		}
	}
}

func (w *storeWatcher) send(ctx context.Context, ev watch.Event) bool {
	if w.q.View != nil && (ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted) {
		ev.Object = w.q.View(ev.Object)
	}
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// translate maps a store event to what this watcher's selectors see: an
// object moving into the selection is ADDED, out of it DELETED.
func (w *storeWatcher) translate(ev store.Event) (watch.Event, bool, error) {
	cur, err := w.reader.spec.Decode(ev.KV)
	if err != nil {
		return watch.Event{}, false, err
	}
	curMatch, err := w.reader.matches(cur, w.q.Label, w.q.Field)
	if err != nil {
		return watch.Event{}, false, err
	}
	if ev.Type == store.EventDelete {
		return watch.Event{Type: watch.Deleted, Object: cur}, curMatch, nil
	}
	prevMatch := false
	if ev.PrevValue != nil {
		prev, err := w.reader.spec.Decode(store.KV{Key: ev.KV.Key, Value: ev.PrevValue, ModRevision: ev.KV.ModRevision})
		if err != nil {
			return watch.Event{}, false, err
		}
		if prevMatch, err = w.reader.matches(prev, w.q.Label, w.q.Field); err != nil {
			return watch.Event{}, false, err
		}
	}
	switch {
	case curMatch && prevMatch:
		return watch.Event{Type: watch.Modified, Object: cur}, true, nil
	case curMatch:
		return watch.Event{Type: watch.Added, Object: cur}, true, nil
	case prevMatch:
		return watch.Event{Type: watch.Deleted, Object: cur}, true, nil
	}
	return watch.Event{}, false, nil
}

// errorEvent carries err to the client inside the stream, as a Status: 410
// Gone when the watch started before the store's compacted history.
func errorEvent(err error) watch.Event {
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, store.ErrCompacted):
		status = apierrors.NewResourceExpired("too old resource version")
	case errors.As(err, &status):
	default:
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	return watch.Event{Type: watch.Error, Object: &s}
}
