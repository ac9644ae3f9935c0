package watchcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// watcher is one client's watch. Its goroutine first replays the initial
// events (a snapshot or a slice of history), then relays dispatched events
// until the client stops it, ctx ends, or the cache cuts it off.
type watcher struct {
	c         *Cache
	filter    filter
	key       indexKey
	bookmarks bool
	view      func(runtime.Object) runtime.Object // WatchOptions.View; nil: none
	shared    bool                                // live events' objects through Config.Share
	// initialized is WatchOptions.Initialized.
	initialized func()
	input       chan *event      // filled by dispatch under Cache.mu, never blocking
	result      chan watch.Event // what the client reads; closed when the goroutine ends
	done        chan struct{}    // closed to stop the goroutine
	doneOnce    sync.Once
}

var _ watch.Interface = (*watcher)(nil)

// maxResultBuffer bounds the events a watcher hands on ahead of its client.
// The API's watch handler flushes only once the result channel is empty
// (as with kube-apiserver's buffered cache watchers), so a client behind by
// a burst gets it in one write instead of one TLS record and syscall per
// event; unbuffered, every event was flushed alone.
const maxResultBuffer = 16

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface.
func (w *watcher) Stop() {
	w.c.mu.Lock()
	w.c.watchers.remove(w)
	w.c.mu.Unlock()
	w.cutOff()
}

func (w *watcher) cutOff() { w.doneOnce.Do(func() { close(w.done) }) }

// initialEvents is what a watcher replays before live events.
type initialEvents struct {
	snap        *tree    // synthetic ADDED for every matching object, or
	history     []*event // the retained events after the requested revision
	rv          int64    // the revision the initial events bring the client to
	endBookmark bool     // close with the watch-list "initial-events-end" bookmark
	lo, hi      string   // key range of snap to replay
}

// Watch streams matching events; see WatchOptions for where it starts.
//
// As kube-apiserver's cacher, once the options are valid it fails only in
// the stream: a revision older than the history or one the cache does not
// reach in time is a watch whose one event is an ERROR carrying the 410 or
// 504 Status. Clients resuming a watch (client-go's RetryWatcher) give up
// and re-list on that event, but retry an error answer forever.
func (c *Cache) Watch(ctx context.Context, opts WatchOptions) (watch.Interface, error) {
	sendInitial, err := c.wantsInitialEvents(opts)
	if err != nil {
		return nil, err
	}
	fromRV, err := watchStartRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if err := c.waitForWatchStart(ctx, opts.ResourceVersion, fromRV); err != nil {
		if apistorage.IsTooLargeResourceVersion(err) {
			return errorWatch(err), nil
		}
		return nil, err
	}
	f := newFilter(opts.Namespace, opts.Label, opts.Field)
	w := &watcher{
		c:           c,
		filter:      f,
		key:         c.watchers.keyFor(f),
		bookmarks:   opts.AllowBookmarks && c.cfg.NewObject != nil,
		view:        opts.View,
		shared:      opts.Shared && c.cfg.Share != nil,
		initialized: opts.Initialized,
		input:       make(chan *event, c.cfg.WatcherBuffer),
		result:      make(chan watch.Event, min(c.cfg.WatcherBuffer, maxResultBuffer)),
		done:        make(chan struct{}),
	}
	init, err := c.register(w, opts, sendInitial, fromRV)
	if apierrors.IsResourceExpired(err) {
		return errorWatch(err), nil
	}
	if err != nil {
		return nil, err
	}
	go w.run(ctx, init)
	return w, nil
}

// errorWatch is a watch whose only event is err as an ERROR Status.
func errorWatch(err error) watch.Interface {
	status := apierrors.NewInternalError(err).ErrStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s.Status()
	}
	result := make(chan watch.Event, 1)
	result <- watch.Event{Type: watch.Error, Object: &status}
	close(result)
	return watch.NewProxyWatcher(result)
}

// wantsInitialEvents says whether the watch starts with the current state as
// ADDED events: by default for RV "" and "0", or as SendInitialEvents says.
func (c *Cache) wantsInitialEvents(opts WatchOptions) (bool, error) {
	if opts.SendInitialEvents == nil {
		return opts.ResourceVersion == "" || opts.ResourceVersion == "0", nil
	}
	if !*opts.SendInitialEvents {
		return false, nil
	}
	if !opts.AllowBookmarks {
		return false, errBadRequest("sendInitialEvents requires allowWatchBookmarks")
	}
	if c.cfg.NewObject == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("watch cache %s cannot send bookmarks (no NewObject)", c.cfg.Prefix))
	}
	return true, nil
}

// watchStartRV parses a watch's resourceVersion (0 for "" and "0").
func watchStartRV(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	return parseRV(rv)
}

// waitForWatchStart waits until the cache can serve a watch from rv ("" is
// consistent with the store; fromRV is rv parsed).
func (c *Cache) waitForWatchStart(ctx context.Context, rv string, fromRV int64) error {
	if rv == "" {
		return c.waitConsistent(ctx)
	}
	return c.waitFresh(ctx, fromRV, false)
}

// register takes the watcher's starting point and adds it to the index under
// one lock, so no event falls between the initial events and the live ones.
func (c *Cache) register(w *watcher, opts WatchOptions, sendInitial bool, fromRV int64) (initialEvents, error) {
	init := initialEvents{endBookmark: opts.SendInitialEvents != nil && *opts.SendInitialEvents}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return init, apierrors.NewServiceUnavailable(fmt.Sprintf("watch cache %s stopped", c.cfg.Prefix))
	}
	switch {
	case sendInitial:
		init.snap, init.rv = c.snap, c.rv
		init.lo, init.hi = c.keyRange(opts.Namespace)
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
		init.rv = c.rv
	default:
		events, ok := c.history.since(fromRV)
		if !ok {
			return init, errTooOld(fromRV, c.history.baseRV)
		}
		init.history, init.rv = events, fromRV
	}
	c.watchers.add(w)
	return init, nil
}

// run is the watcher's goroutine.
func (w *watcher) run(ctx context.Context, init initialEvents) {
	defer close(w.result)
	defer w.Stop()
	preTimeout, stop := w.preTimeoutTimer(ctx)
	defer stop()
	if !w.replay(ctx, init) {
		return
	}
	if w.initialized != nil {
		w.initialized()
	}
	for {
		select {
		case e := <-w.input:
			if e.rv <= init.rv && e.kind != kindBookmark {
				continue // already covered by the initial events
			}
			if !w.deliver(ctx, e) {
				return
			}
		case <-preTimeout:
			w.c.queueBookmark(w)
		case <-w.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// preTimeoutBookmark is how long before its deadline a watch that allows
// bookmarks gets one, as from kube-apiserver's cacher: the client resumes
// from the revision the cache had then, not from its last matching event,
// which may have left the history long ago.
const preTimeoutBookmark = 2 * time.Second

// preTimeoutTimer fires preTimeoutBookmark before ctx's deadline (nil
// channel: never); stop releases it.
func (w *watcher) preTimeoutTimer(ctx context.Context) (<-chan time.Time, func()) {
	deadline, ok := ctx.Deadline()
	if !w.bookmarks || !ok {
		return nil, func() {}
	}
	t := w.c.clock.NewTimer(time.Until(deadline) - preTimeoutBookmark)
	return t.C(), func() { t.Stop() }
}

func (w *watcher) replay(ctx context.Context, init initialEvents) bool {
	ok := true
	if init.snap != nil {
		init.snap.AscendGreaterOrEqual(&entry{key: init.lo}, func(e *entry) bool {
			if init.hi != "" && e.key >= init.hi {
				return false
			}
			if w.filter.matches(e) {
				ok = w.send(ctx, w.present(watch.Event{Type: watch.Added, Object: e.obj}))
			}
			return ok
		})
	}
	for _, e := range init.history {
		if !ok {
			break
		}
		ok = w.deliver(ctx, e)
	}
	if ok && init.endBookmark {
		ok = w.send(ctx, w.bookmark(init.rv, true))
	}
	return ok
}

// deliver converts e for this watcher (or drops it) and sends it.
func (w *watcher) deliver(ctx context.Context, e *event) bool {
	ev, ok := w.convert(e)
	if !ok {
		return true
	}
	if w.shared && ev.Type != watch.Bookmark && ev.Object == e.cur.obj {
		ev.Object = e.sharedObject(w.c.cfg.Share)
		return w.send(ctx, ev)
	}
	return w.send(ctx, w.present(ev))
}

// present applies the watcher's view to an event's object.
func (w *watcher) present(ev watch.Event) watch.Event {
	if w.view != nil && ev.Type != watch.Bookmark {
		ev.Object = w.view(ev.Object)
	}
	return ev
}

// convert maps a shared event to what this watcher sees: an object entering
// its selector is ADDED, leaving it DELETED (the previous object at the
// event's revision), staying in it MODIFIED.
func (w *watcher) convert(e *event) (watch.Event, bool) {
	switch e.kind {
	case kindBookmark:
		if !w.bookmarks {
			return watch.Event{}, false
		}
		return w.bookmark(e.rv, false), true
	case kindDelete:
		if w.filter.matches(e.prev) { // deletes always carry the cached object
			return watch.Event{Type: watch.Deleted, Object: e.cur.obj}, true
		}
		return watch.Event{}, false
	}
	now, before := w.filter.matches(e.cur), w.filter.matches(e.prev)
	switch {
	case now && before:
		return watch.Event{Type: watch.Modified, Object: e.cur.obj}, true
	case now:
		return watch.Event{Type: watch.Added, Object: e.cur.obj}, true
	case before:
		return watch.Event{Type: watch.Deleted, Object: e.prevObjectAtRV()}, true
	}
	return watch.Event{}, false
}

// bookmark builds a BOOKMARK event: an empty object carrying only rv.
func (w *watcher) bookmark(rv int64, initialEventsEnd bool) watch.Event {
	obj := w.c.cfg.NewObject()
	if acc, err := meta.Accessor(obj); err == nil {
		acc.SetResourceVersion(formatRV(rv))
		if initialEventsEnd {
			acc.SetAnnotations(map[string]string{InitialEventsAnnotation: "true"})
		}
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}

func (w *watcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	case <-ctx.Done():
		return false
	}
}
