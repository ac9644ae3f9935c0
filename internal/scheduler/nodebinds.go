package scheduler

import (
	"context"
	"sync"
)

// bindsPerNode bounds the bindings in flight to one node. The API server
// checks and updates one usage record per node in every bind transaction
// (internal/apiserver pod_accounting.go), so concurrent binds to one node
// conflict and are retried in the server, each retry re-reading the pod,
// node and record; past 16 conflicts a bind fails with 409 and the pod
// backs off. With 128 binds in flight spread over 4 nodes, 26-36% of the
// binds failed that way (TestOneSchedulerBindsEveryPodOfABurst: 1261-1361
// binding requests for 1000 pods); with 1, 2 or 4 per node, none did (1000
// requests; 8: 1006). Two lets the next bind travel while one commits.
const bindsPerNode = 2

// nodeBindLimit hands out bindsPerNode slots per node.
type nodeBindLimit struct {
	mu    sync.Mutex
	nodes map[string]*nodeSlots
}

type nodeSlots struct {
	slots chan struct{}
	users int // holders and waiters; the entry goes when none remain
}

func newNodeBindLimit() *nodeBindLimit {
	return &nodeBindLimit{nodes: map[string]*nodeSlots{}}
}

// acquire waits for a slot on node; the returned func gives it back.
func (l *nodeBindLimit) acquire(ctx context.Context, node string) (release func(), err error) {
	l.mu.Lock()
	e, ok := l.nodes[node]
	if !ok {
		e = &nodeSlots{slots: make(chan struct{}, bindsPerNode)}
		l.nodes[node] = e
	}
	e.users++
	l.mu.Unlock()
	select {
	case e.slots <- struct{}{}:
		return func() { <-e.slots; l.leave(node, e) }, nil
	case <-ctx.Done():
		l.leave(node, e)
		return nil, ctx.Err()
	}
}

func (l *nodeBindLimit) leave(node string, e *nodeSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.users--; e.users == 0 {
		delete(l.nodes, node)
	}
}
