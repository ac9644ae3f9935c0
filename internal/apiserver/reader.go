package apiserver

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/watchcache"
)

// collectionReader serves LIST and WATCH of one resource. In production it
// is the watch cache (internal/watchcache), and every reader takes that
// package's options; a reader without shared objects (storeReader decodes
// each watcher's own) ignores WatchOptions.Shared.
type collectionReader interface {
	// Get reads one object at least as fresh as minRV (0: any); the
	// returned object is shared and must not be modified.
	Get(ctx context.Context, key string, minRV int64) (runtime.Object, int64, error)
	List(ctx context.Context, opts watchcache.ListOptions) (watchcache.ListResult, error)
	Watch(ctx context.Context, opts watchcache.WatchOptions) (watch.Interface, error)
}

// readerFactory builds the reader of one resource; the server calls it once
// per resource at start-up.
type readerFactory func(ctx context.Context, spec readerSpec) (collectionReader, error)

// readerSpec is what a reader needs to know about the resource it reads.
type readerSpec struct {
	Store    store.Interface
	Resource schema.GroupResource
	Prefix   string // "/registry/pods/" (trailing slash)
	Decode   func(kv store.KV) (runtime.Object, error)
	Attrs    func(obj runtime.Object) (labels.Set, fields.Set, error)
	// NewObj makes an empty object of the kind (for bookmark events).
	NewObj func() runtime.Object
	// IndexFields are exact-match field selectors worth indexing watchers
	// by ("spec.nodeName": every node agent watches its own pods).
	IndexFields []string
	// HistorySize bounds how far back a watch may resume (0: the cache's default).
	HistorySize int
	Logger      *slog.Logger
}
