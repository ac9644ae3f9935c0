package scheduler

import (
	"fmt"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

func TestQueueHoldsAKeyUntilReleasedAndNotEnqueuedAgain(t *testing.T) {
	q := newPodQueue(initialBackoff, maxBackoff, func(string) int32 { return 0 })
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

// As kube-scheduler's PrioritySort: the highest priority first, equal
// priorities in the order they were queued, a key queued again while
// waiting keeping its place.
func TestQueueHandsOutByPriorityThenArrival(t *testing.T) {
	priority := map[string]int32{"ns/low": -5, "ns/a": 0, "ns/b": 0, "ns/critical": 2000000000, "ns/high": 100}
	q := newPodQueue(initialBackoff, maxBackoff, func(key string) int32 { return priority[key] })
	defer q.shutDown()
	for _, key := range []string{"ns/low", "ns/a", "ns/high", "ns/b", "ns/critical", "ns/a"} {
		q.add(key)
	}
	var got []string
	for range 5 {
		d, ok := q.get()
		if !ok {
			t.Fatal("queue shut down")
		}
		got = append(got, d.key)
		q.release(d)
		q.done(d)
	}
	if want := "[ns/critical ns/high ns/a ns/b ns/low]"; fmt.Sprint(got) != want {
		t.Fatalf("handed out %v, want %s", got, want)
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
