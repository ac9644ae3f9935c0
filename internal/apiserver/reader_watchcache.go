package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/berth/berth/internal/watchcache"
)

// watchCacheReader serves a resource's LIST and WATCH from its watch cache,
// which one store watch keeps current.
type watchCacheReader struct {
	cache *watchcache.Cache
	// store serves a consistent LIST the cache could not catch up to in
	// time, as kube-apiserver falls back to etcd: the cache learns of
	// revisions made under other prefixes only from etcd's progress
	// notifications, which etcd defers while any watcher on the stream is
	// behind, so under a write storm elsewhere a quiet resource's cache may
	// not prove itself fresh within the timeout.
	store *storeReader
	log   *slog.Logger
}

// watchCacheReaders makes watch-cache readers that share metrics (nil: none).
func watchCacheReaders(metrics *watchcache.Metrics) readerFactory {
	return func(ctx context.Context, spec readerSpec) (collectionReader, error) {
		return newWatchCacheReader(ctx, spec, metrics)
	}
}

// newWatchCacheReader starts the resource's cache (its goroutine lives until
// ctx ends) and waits for its first list.
func newWatchCacheReader(ctx context.Context, spec readerSpec, metrics *watchcache.Metrics) (collectionReader, error) {
	cache := watchcache.New(watchcache.Config{
		Metrics:     metrics,
		Store:       spec.Store,
		Resource:    spec.Resource,
		Prefix:      spec.Prefix,
		Decode:      decodeSharingParts(spec.Decode),
		Attrs:       spec.Attrs,
		IndexFields: spec.IndexFields,
		HistorySize: spec.HistorySize,
		NewObject:   spec.NewObj,
		Share:       newSharedEncoding,
		Logger:      spec.Logger,
	})
	go func() {
		if err := cache.Run(ctx); err != nil {
			spec.Logger.Error("watch cache stopped", "err", err)
		}
	}()
	if err := cache.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("watch cache of %s: %w", spec.Resource, err)
	}
	return watchCacheReader{cache: cache, store: &storeReader{spec: spec}, log: spec.Logger}, nil
}

func (r watchCacheReader) Get(ctx context.Context, key string, minRV int64) (runtime.Object, int64, error) {
	return r.cache.Get(ctx, key, minRV)
}

func (r watchCacheReader) List(ctx context.Context, opts watchcache.ListOptions) (watchcache.ListResult, error) {
	res, err := r.cache.List(ctx, opts)
	if err != nil && consistentList(opts) && apistorage.IsTooLargeResourceVersion(err) && ctx.Err() == nil {
		r.log.Info("watch cache not fresh in time; serving a consistent list from the store", "err", err)
		return r.store.List(ctx, opts)
	}
	return res, err
}

// consistentList reports whether opts asks for the latest state (no
// resourceVersion, no continue token): the one read the store can always
// serve in the cache's place with the same meaning.
func consistentList(opts watchcache.ListOptions) bool {
	return opts.ResourceVersion == "" && opts.Continue == ""
}

func (r watchCacheReader) Watch(ctx context.Context, opts watchcache.WatchOptions) (watch.Interface, error) {
	if legacyInitialEvents(opts) {
		// The handlers default a plain watch from "" or "0" to
		// sendInitialEvents=true; without bookmarks that is the legacy
		// replay, which the cache does when the option is unset.
		opts.SendInitialEvents = nil
	}
	return r.cache.Watch(ctx, opts)
}

// encodedWatch makes opts fit for a watch whose events the API's encoders
// write: they set and reset TypeMeta on what they encode, and the cache
// shares its objects between watchers, so each watcher gets its own shallow
// copies (nested fields stay shared and are only read) of what view (nil:
// none) makes of them, in the cache's watcher goroutine rather than in one
// more per watch. Watchers that see objects as stored share each live
// event's encoding instead (sharedEncoding hands its encoders shallow
// copies).
func encodedWatch(opts watchcache.WatchOptions, view func(runtime.Object) runtime.Object) watchcache.WatchOptions {
	opts.Shared = view == nil
	opts.View = func(obj runtime.Object) runtime.Object {
		if view != nil {
			obj = view(obj)
		}
		return shallowCopy(obj)
	}
	return opts
}

func shallowCopy(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(runtime.Object)
}

func legacyInitialEvents(opts watchcache.WatchOptions) bool {
	return opts.SendInitialEvents != nil && *opts.SendInitialEvents && !opts.AllowBookmarks &&
		(opts.ResourceVersion == "" || opts.ResourceVersion == "0")
}

// ObjectStats implements objectCounter.
func (r watchCacheReader) ObjectStats() (apistorage.Stats, error) { return r.cache.Stats(), nil }
