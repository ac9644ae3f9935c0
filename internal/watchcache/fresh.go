package watchcache

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth/berth/internal/store"
)

// progressRetry is how often a waiting consistent read repeats its progress
// request: etcd ignores one sent while the watch is still catching up.
const progressRetry = 100 * time.Millisecond

// waitFresh blocks until the cache has reached rv, for at most
// FreshnessTimeout (then 504, as kube-apiserver). With requestProgress set it
// keeps asking the store to report progress, so the cache's watch learns of
// revisions made under other prefixes.
func (c *Cache) waitFresh(ctx context.Context, rv int64, requestProgress bool) error {
	if err := c.WaitReady(ctx); err != nil {
		return errors.NewServiceUnavailable(err.Error())
	}
	timeout := c.clock.NewTimer(c.cfg.FreshnessTimeout)
	defer timeout.Stop()
	pr, canRequest := c.cfg.Store.(store.ProgressRequester)
	requestProgress = requestProgress && canRequest
	for {
		c.mu.RLock()
		current, moved, stopped := c.rv, c.rvMoved, c.stopped
		c.mu.RUnlock()
		if current >= rv {
			return nil
		}
		if stopped {
			return errors.NewServiceUnavailable(fmt.Sprintf("watch cache %s stopped", c.cfg.Prefix))
		}
		var retry <-chan time.Time
		if requestProgress {
			if err := pr.RequestProgress(ctx, c.cfg.Prefix); err != nil {
				c.log.Warn("progress request failed", "err", err)
			}
			retry = c.clock.After(progressRetry)
		}
		select {
		case <-moved:
		case <-retry:
		case <-timeout.C():
			return errTooLarge(rv, current)
		case <-ctx.Done():
			return errors.NewTimeoutError(fmt.Sprintf("waiting for resource version %d: %v", rv, ctx.Err()), 1)
		}
	}
}

// waitConsistent waits until the cache holds everything the store had
// committed when it was called: a quorum read of the revision, not a list.
func (c *Cache) waitConsistent(ctx context.Context) error {
	rv, err := c.cfg.Store.CurrentRevision(ctx)
	if err != nil {
		return errors.NewInternalError(fmt.Errorf("read current revision: %w", err))
	}
	return c.waitFresh(ctx, rv, true)
}
