package apiserver

import (
	"context"
	"strings"
	"sync"

	"github.com/berth/berth/internal/store"
)

// maxCachedUsages bounds the usage cache; past it the cache starts over
// (node names that come and go would otherwise accumulate).
const maxCachedUsages = 1 << 14

// usageCache remembers each node's usage record as this server last wrote
// or read it, with its mod revision. Every bind and every release would
// otherwise start with a quorum read of the record, which under a write
// load waits for the writes before it to apply. A node's transactions take
// turns within this server (nodeTurns) and a commit updates the copy before
// the turn passes on, so the copy is current for everything this server
// wrote. The transactions guard the record's revision, so a copy that
// another server (sharing an external etcd) has since changed only costs a
// conflict and a retry from the store; it never decides a check.
type usageCache struct {
	mu      sync.Mutex
	records map[string]usageRecord // by node name
}

type usageRecord struct {
	value []byte // the record's JSON, as stored
	rev   int64
}

func newUsageCache() *usageCache {
	return &usageCache{records: map[string]usageRecord{}}
}

func (c *usageCache) get(node string) (usageRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.records[node]
	return rec, ok
}

func (c *usageCache) put(node string, rec usageRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.records[node]; !ok && len(c.records) >= maxCachedUsages {
		clear(c.records)
	}
	if old, ok := c.records[node]; !ok || old.rev < rec.rev {
		c.records[node] = rec
	}
}

// committed records the usage records a transaction wrote at rev.
func (c *usageCache) committed(ops []store.Op, rev int64) {
	for _, op := range ops {
		node, ok := strings.CutPrefix(op.Key, nodeUsagePrefix)
		if ok && !op.CheckOnly && op.Value != nil {
			c.put(node, usageRecord{value: op.Value, rev: rev})
		}
	}
}

// Txn writes ops and, when they commit, remembers the usage records among
// them. Binding's transactions come through here too.
func (a *podAccounting) Txn(ctx context.Context, ops []store.Op) (int64, error) {
	rev, err := a.Interface.Txn(ctx, ops)
	if err == nil {
		a.usages.committed(ops, rev)
	}
	return rev, err
}
