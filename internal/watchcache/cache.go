package watchcache

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

var errNotImplemented = errors.New("watchcache: not implemented yet")

// Cache is one resource's watch cache.
type Cache struct {
	cfg Config
}

// New returns a cache; call Run to fill it.
func New(cfg Config) *Cache { return &Cache{cfg: cfg} }

// Run lists the prefix, then watches it, re-listing on compaction; it returns
// when ctx ends.
func (c *Cache) Run(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

// WaitReady blocks until the first list has been loaded.
func (c *Cache) WaitReady(ctx context.Context) error { return errNotImplemented }

// List returns the matching objects, the revision they were read at and a
// continue token when Limit cut the page short.
func (c *Cache) List(ctx context.Context, opts ListOptions) ([]runtime.Object, int64, string, error) {
	return nil, 0, "", errNotImplemented
}

// Get returns the object stored at key (the full store key) once the cache
// has reached minRV, with the cache's revision.
func (c *Cache) Get(ctx context.Context, key string, minRV int64) (runtime.Object, int64, error) {
	return nil, 0, errNotImplemented
}

// Watch streams matching events; see WatchOptions for where it starts.
func (c *Cache) Watch(ctx context.Context, opts WatchOptions) (watch.Interface, error) {
	return nil, errNotImplemented
}
