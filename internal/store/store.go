// Package store is the API server's only door to persistent state. It accepts
// just the shapes of transaction the API server needs (create-if-absent,
// compare-and-swap update and delete, and binding) and nothing else, so the
// rest of berth cannot grow accidental dependencies on etcd's full API.
//
// Values are opaque bytes (Kubernetes protobuf, encoded by the caller); keys
// are "/registry/<resource>/<namespace>/<name>" or "/registry/<resource>/<name>".
// Every revision is an etcd revision, which the API serves as resourceVersion.
package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// KV is one stored object.
type KV struct {
	Key         string
	Value       []byte
	ModRevision int64 // the object's resourceVersion
}

// ListOptions selects a page of keys under a prefix.
type ListOptions struct {
	// Revision reads at that revision (0 = the latest, a quorum read).
	Revision int64
	// Limit caps the page size (0 = no limit).
	Limit int64
	// StartKey continues a previous page (inclusive).
	StartKey string
}

// ListResult is one page.
type ListResult struct {
	KVs      []KV
	Revision int64 // the revision the page was read at
	More     bool  // more keys follow the last one returned
	// Count is how many keys the range holds from StartKey on, regardless
	// of Limit.
	Count int64
}

// EventType says what happened to a key.
type EventType int

const (
	EventPut EventType = iota
	EventDelete
)

// Event is one change, in revision order.
type Event struct {
	Type      EventType
	KV        KV     // for deletes: Value is the value before deletion, ModRevision the delete's revision
	PrevValue []byte // value before the change, when there was one
}

// Op is one extra guarded write inside a Txn (binding writes the node's
// usage record with one).
type Op struct {
	Key string
	// ExpectModRevision guards the write: 0 means the key must not exist.
	ExpectModRevision int64
	Value             []byte // nil deletes the key
	// CheckOnly makes the op a guard alone: the key is compared, not
	// written (binding reads a node at a revision and must not let it move).
	CheckOnly bool
}

// Interface is the narrow store contract.
type Interface interface {
	// Get reads one key (quorum). ErrNotFound if absent.
	Get(ctx context.Context, key string) (KV, error)
	// List reads a page of keys under prefix.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)
	// Create writes key only if absent; ErrAlreadyExists otherwise. Returns the new revision.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update writes key only if its ModRevision still equals expected; ErrConflict
	// otherwise (ErrNotFound when it is gone). Returns the new revision.
	Update(ctx context.Context, key string, expected int64, value []byte) (int64, error)
	// Delete removes key only if its ModRevision equals expected (0 = any);
	// ErrConflict / ErrNotFound otherwise. Returns the delete's revision.
	Delete(ctx context.Context, key string, expected int64) (int64, error)
	// Txn applies all ops atomically, each guarded by its ExpectModRevision;
	// ErrConflict if any guard fails, and then nothing is written.
	Txn(ctx context.Context, ops []Op) (int64, error)
	// Watch streams events under prefix with revision > fromRevision, in order,
	// until ctx ends. If fromRevision was compacted the channel yields one
	// WatchResult with Err = ErrCompacted and closes.
	Watch(ctx context.Context, prefix string, fromRevision int64) <-chan WatchResult
	// CurrentRevision is the store's latest revision (quorum).
	CurrentRevision(ctx context.Context) (int64, error)
	// Compact discards history before revision.
	Compact(ctx context.Context, revision int64) error
}

// WatchResult is a batch of events or a terminal error.
type WatchResult struct {
	Events []Event
	Err    error
	// Revision is the store revision this result brings the watcher up to:
	// the last event's, or for a progress notification (no events) the
	// store's revision at that moment, so an idle watcher still learns that
	// it is current.
	Revision int64
}

// CompactionTracker is implemented by stores that know the revision their
// history was last compacted to (0: none known).
type CompactionTracker interface {
	CompactedRevision() int64
}

// ProgressRequester is implemented by stores that can make their watches
// report progress on demand. The watch cache uses it to serve consistent
// reads: it learns the store's current revision, then asks for progress so
// that its watch catches up even when nothing under its prefix changed.
type ProgressRequester interface {
	// RequestProgress asks for progress on the watches under prefix.
	RequestProgress(ctx context.Context, prefix string) error
}

// Expiring is implemented by stores whose keys can expire: the API server
// keeps events only for --event-ttl, as kube-apiserver does. An expiring
// key lives at least ttl after its last write, and at most a little longer
// (stores share one expiry among the writes of a short window).
type Expiring interface {
	// CreateExpiring is Create of a key that expires ttl after this write.
	CreateExpiring(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error)
	// UpdateExpiring is Update; the key then expires ttl after this write.
	UpdateExpiring(ctx context.Context, key string, expected int64, value []byte, ttl time.Duration) (int64, error)
}

// Snapshotter is implemented by stores that can stream a consistent backup
// of everything they hold (an etcd snapshot), for `berth snapshot save`.
type Snapshotter interface {
	Snapshot(ctx context.Context) (io.ReadCloser, error)
}

// Sentinel errors; wrap them with %w, test them with errors.Is.
var (
	ErrNotFound      = errors.New("store: key not found")
	ErrAlreadyExists = errors.New("store: key already exists")
	ErrConflict      = errors.New("store: revision conflict")
	ErrCompacted     = errors.New("store: revision compacted")
	// ErrTooLarge: the value or transaction exceeds the store's request size
	// limit (the API serves it as 413).
	ErrTooLarge = errors.New("store: request too large")
	// ErrTooManyRequests: the store sheds load (etcd's applied index has
	// fallen far behind); the API serves it as 429 with Retry-After.
	ErrTooManyRequests = errors.New("store: too many requests")
	// ErrNoSpace: the store is over its space quota (etcd's NOSPACE alarm)
	// and refuses writes until space is reclaimed; reads and deletes go on.
	// The API serves it as kube-apiserver does, a 500 with etcd's message.
	ErrNoSpace = errors.New("store: database space exceeded")
)
