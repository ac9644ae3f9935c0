package watchcache

import apistorage "k8s.io/apiserver/pkg/storage"

// Stats is how many objects the cache holds and their average stored size,
// which API priority and fairness weighs a LIST by (kube-apiserver's etcd
// storage reports the same from its key sizes).
func (c *Cache) Stats() apistorage.Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	stats := apistorage.Stats{ObjectCount: int64(c.live.Len())}
	if stats.ObjectCount > 0 {
		stats.EstimatedAverageObjectSizeBytes = c.bytes / stats.ObjectCount
	}
	return stats
}
