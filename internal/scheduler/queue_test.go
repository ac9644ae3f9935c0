package scheduler

import "testing"

func TestQueueHoldsAKeyUntilReleasedAndNotEnqueuedAgain(t *testing.T) {
	q := newPodQueue()
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
