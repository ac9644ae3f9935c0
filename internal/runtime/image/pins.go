package image

import "sync"

// pinSet names content (snapshot chain IDs, blob digests) that a pull has
// written but not yet recorded in the metadata, so that garbage collection
// run by a concurrent removal leaves it alone.
type pinSet struct {
	mu     sync.Mutex
	counts map[string]int
}

// pin holds ids until the returned func is called.
func (p *pinSet) pin(ids []string) (unpin func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	for _, id := range ids {
		p.counts[id]++
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, id := range ids {
			if p.counts[id]--; p.counts[id] <= 0 {
				delete(p.counts, id)
			}
		}
	}
}

// unlessPinned runs remove unless id is pinned, holding the set's lock
// meanwhile: a pull pins its content before checking whether it exists, so
// content is either pinned in time or already gone when the pull looks.
func (p *pinSet) unlessPinned(id string, remove func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts[id] > 0 {
		return nil
	}
	return remove()
}
