package scheduler

import (
	"container/heap"

	"k8s.io/client-go/util/workqueue"
)

// priorityOrder is the storage under the scheduler's workqueue, in the
// order of kube-scheduler's default QueueSort plugin (PrioritySort): the
// pod of highest spec.priority first, pods of one priority in the order
// they were queued. client-go's workqueue keeps dedup, back-off and the
// processing set; only which ready key comes next is decided here.
// workqueue calls it from one goroutine under its own lock.
type priorityOrder struct {
	priorityOf func(key string) int32
	items      priorityHeap
	seq        uint64
}

var _ workqueue.Queue[string] = (*priorityOrder)(nil)

func newPriorityOrder(priorityOf func(key string) int32) *priorityOrder {
	return &priorityOrder{priorityOf: priorityOf}
}

// Touch leaves a key queued again where it is: a pod's priority does not
// change after creation, and it keeps its place among its equals.
func (q *priorityOrder) Touch(string) {}

func (q *priorityOrder) Push(key string) {
	q.seq++
	heap.Push(&q.items, queuedKey{key: key, priority: q.priorityOf(key), seq: q.seq})
}

func (q *priorityOrder) Len() int { return len(q.items) }

func (q *priorityOrder) Pop() string { return heap.Pop(&q.items).(queuedKey).key }

// queuedKey is a key with what orders it.
type queuedKey struct {
	key      string
	priority int32
	seq      uint64
}

// priorityHeap is a container/heap of queued keys, highest priority, then
// earliest, on top.
type priorityHeap []queuedKey

func (h priorityHeap) Len() int { return len(h) }
func (h priorityHeap) Less(i, j int) bool {
	if h[i].priority != h[j].priority {
		return h[i].priority > h[j].priority
	}
	return h[i].seq < h[j].seq
}
func (h priorityHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *priorityHeap) Push(x any)   { *h = append(*h, x.(queuedKey)) }
func (h *priorityHeap) Pop() any {
	old := *h
	last := old[len(old)-1]
	*h = old[:len(old)-1]
	return last
}
