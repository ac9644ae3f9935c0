package scheduler

import (
	"fmt"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

func TestQueueHoldsAKeyUntilReleasedAndNotEnqueuedAgain(t *testing.T) {
	q := newPodQueue(initialBackoff, maxBackoff)
	defer q.shutDown()
	q.add("ns/p")
	d, ok := q.get()
	if !ok || d.key != "ns/p" || !q.holds("ns/p") {
		t.Fatalf("get: %+v %v, held %v", d, ok, q.holds("ns/p"))
	}

	q.add("ns/p") // an update while the key is worked on
	q.release(d)
	if !q.holds("ns/p") {
		t.Fatal("releasing the older delivery dropped a key enqueued since")
	}
	q.done(d)
	again, ok := q.get() // workqueue re-delivers the key enqueued during work
	if !ok || again.key != "ns/p" {
		t.Fatalf("re-delivery: %+v %v", again, ok)
	}
	q.release(again)
	q.done(again)
	if q.holds("ns/p") {
		t.Fatal("a released key with no newer enqueue is still held")
	}
}

// BenchmarkScheduleOneCycle1000Nodes is one whole scheduling cycle as Run
// makes it (queue delivery, informer read, decision among 1000 nodes,
// assumption), without the API calls that carry the decision out.
func BenchmarkScheduleOneCycle1000Nodes(b *testing.B) {
	s := New(Config{Client: fake.NewClientset()})
	defer s.queue.shutDown()
	for i := range 1000 {
		node := testNode(fmt.Sprintf("n%04d", i), "4", "16Gi")
		s.cache.setNode(node)
	}
	pod := testPod("p", "100m", "128Mi")
	if err := s.factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.queue.add(keyOf(pod))
		d, _ := s.queue.get()
		if work := s.scheduleOne(d); !work.holdsKey {
			b.Fatal("the pod was not assumed")
		}
		s.cache.unassume(pod.UID)
		s.queue.release(d)
		s.queue.done(d)
	}
}
