// Package watchcache serves LIST and WATCH for one resource from memory. One
// store watch per resource feeds a sorted copy of the current objects and a
// bounded ring of recent events; watchers are indexed by namespace and by
// exact-match field values (e.g. spec.nodeName), so an event is offered only to
// the watchers that can match it. The model is kube-apiserver's cacher
// (staging/src/k8s.io/apiserver/pkg/storage/cacher).
//
// Errors returned to callers are *apierrors.StatusError (410 Gone for a
// resourceVersion older than the history, 504 Timeout when the cache cannot
// catch up, 400 for contradictory options, 404 for Get) so the API server can
// hand them to clients as they are.
package watchcache

import (
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/store"
)

// Config describes one resource's cache.
type Config struct {
	Store store.Interface
	// Resource names the resource in errors (404 and the like).
	Resource schema.GroupResource
	Prefix   string // e.g. "/registry/pods/"; keys are Prefix+"<ns>/<name>" or Prefix+"<name>"
	// Decode turns stored bytes into a typed object whose resourceVersion is
	// kv.ModRevision. For a delete, kv.Value is the last value and
	// kv.ModRevision the delete's revision. Decoded objects are shared between
	// all readers: callers of List, Get and Watch must not modify them.
	Decode func(kv store.KV) (runtime.Object, error)
	// Attrs returns the label and field sets that selectors are matched against.
	Attrs func(obj runtime.Object) (labels.Set, fields.Set, error)
	// IndexFields are field names whose exact-match selectors index watchers,
	// e.g. "spec.nodeName". Namespace is always indexed.
	IndexFields []string
	// HistorySize fixes the ring of recent events at this many. 0 (the
	// default) sizes it as kube-apiserver sizes its watch cache: at least
	// 1000 events, growing to up to 102400 to keep every event younger than
	// 75 seconds, so that a watch resumes from any revision it saw that
	// recently.
	HistorySize int
	// NewObject returns an empty object of the resource's type; bookmarks carry
	// one with only resourceVersion (and annotations) set. Required for
	// bookmarks (AllowBookmarks, SendInitialEvents); without it none are sent.
	NewObject func() runtime.Object
	// WatcherBuffer is each watcher's event buffer; a watcher whose buffer is
	// full is cut off (default 100).
	WatcherBuffer int
	// BookmarkInterval is how often watchers that allow bookmarks get one
	// (default 1 minute).
	BookmarkInterval time.Duration
	// FreshnessTimeout bounds how long a read waits for the cache to reach a
	// requested revision before failing with 504 (default 3s, as kube-apiserver).
	FreshnessTimeout time.Duration
	// Share, if set, wraps an event's object once for every watcher that
	// asks for shared objects (WatchOptions.Shared): the API server wraps it
	// in a runtime.CacheableObject, so that the event is encoded once per
	// encoding instead of once per watcher.
	Share   func(runtime.Object) runtime.Object
	Clock   clock.WithTicker // default: the real clock
	Logger  *slog.Logger
	Metrics *Metrics // optional; shared by all caches on one registry
}

// ListOptions selects what List returns.
type ListOptions struct {
	Namespace string
	Label     labels.Selector // nil = everything
	Field     fields.Selector // nil = everything
	// ResourceVersion: "" = consistent (as fresh as the store), "0" = any, N = not older than N.
	ResourceVersion string
	// ResourceVersionMatch: "", "Exact" or "NotOlderThan".
	ResourceVersionMatch string
	Limit                int64
	Continue             string
}

// WatchOptions selects what Watch streams.
type WatchOptions struct {
	Namespace string
	Label     labels.Selector
	Field     fields.Selector
	// ResourceVersion: "" = current state then changes (consistent), "0" = current
	// state then changes (any freshness), N = changes after N.
	ResourceVersion   string
	SendInitialEvents *bool
	AllowBookmarks    bool
	// View, if set, maps each object this watcher is sent in ADDED,
	// MODIFIED and DELETED events (not bookmarks), in the watcher's own
	// goroutine: objects are shared by all watchers, so View must not modify
	// its argument but return it or a changed copy. It spares callers a
	// goroutine per watch to do the same downstream.
	View func(runtime.Object) runtime.Object
	// Shared sends live events' objects as Config.Share wrapped them, one
	// wrapper per event for all such watchers, instead of through View
	// (which still maps the initial events and objects leaving the
	// selection). Ignored without Config.Share.
	Shared bool
	// Initialized, if set, is called once from the watcher's goroutine when
	// its initial events are handed on (at once when there are none), as
	// kube-apiserver's cache watchers signal API priority and fairness,
	// which holds the watch's seat until then.
	Initialized func()
}

// InitialEventsAnnotation marks the bookmark that ends a watch-list's initial events.
const InitialEventsAnnotation = "k8s.io/initial-events-end"
