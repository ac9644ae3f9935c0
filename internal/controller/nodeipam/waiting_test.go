package nodeipam

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/berth/berth/internal/controller/keyloop"
)

// stepper drives a controller's worker by hand over a fake clientset, its
// informer's store filled directly, so each sync is one visible step.
type stepper struct {
	t        *testing.T
	c        *Controller
	nodes    cache.Indexer
	recorder *events.FakeRecorder
	version  int
}

func newStepper(t *testing.T, clusterCIDR string, mask int, existing ...*v1.Node) *stepper {
	t.Helper()
	objs := make([]runtime.Object, 0, len(existing))
	for _, n := range existing {
		objs = append(objs, n)
	}
	client := fake.NewClientset(objs...)
	c, err := New(Config{Client: client, ClusterCIDR: clusterCIDR, NodeMaskSize: mask})
	if err != nil {
		t.Fatal(err)
	}
	s := &stepper{t: t, c: c, nodes: c.factory.Core().V1().Nodes().Informer().GetIndexer(), recorder: events.NewFakeRecorder(100)}
	c.recorder = s.recorder
	for _, n := range existing {
		s.put(n)
	}
	if err := c.recover(); err != nil {
		t.Fatal(err)
	}
	return s
}

// put stores n in the informer's cache as a new version and queues it, as
// an informer update does.
func (s *stepper) put(n *v1.Node) {
	s.t.Helper()
	s.version++
	n = n.DeepCopy()
	n.ResourceVersion = strconv.Itoa(s.version)
	if err := s.nodes.Update(n); err != nil {
		s.t.Fatal(err)
	}
	s.c.queue.Add(n.Name)
}

func (s *stepper) remove(name string) {
	s.t.Helper()
	if err := s.nodes.Delete(node(name, "")); err != nil {
		s.t.Fatal(err)
	}
	s.c.queue.Add(name)
}

// drain runs the worker until its queue is empty (rate-limited retries are
// not in it yet: they are counted by NumRequeues).
func (s *stepper) drain() {
	for s.c.queue.Len() > 0 {
		keyloop.ProcessNext(context.Background(), s.c.queue, s.c.sync, s.c.onError)
	}
}

// recorded takes the events recorded so far.
func (s *stepper) recorded() []string {
	var out []string
	for {
		select {
		case e := <-s.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

func TestWaitingNodeGetsOneEventAndNoTimedRetries(t *testing.T) {
	s := newStepper(t, "10.88.0.0/23", 24, node("a", "10.88.0.0/24"), node("b", "10.88.1.0/24"), node("c", ""))
	s.drain()
	for i := range 5 { // the waiting Node changes: status updates, labels
		waiting := node("c", "")
		waiting.Labels = map[string]string{"round": strconv.Itoa(i)}
		s.put(waiting)
		s.drain()
		if got := s.c.queue.NumRequeues("c"); got != 0 {
			t.Fatalf("round %d: node c is retried on a timer (%d requeues); want it parked until a release", i, got)
		}
	}
	refusals := s.recorded()
	if len(refusals) != 1 || countPrefix(refusals, "Warning CIDRNotAvailable") != 1 {
		t.Fatalf("events while c waited through 6 syncs: %q; want one CIDRNotAvailable", refusals)
	}

	// A release wakes the waiter, which gets the freed CIDR.
	s.remove("a")
	s.drain()
	if got := s.c.owned["c"].String(); got != "10.88.0.0/24" {
		t.Fatalf("node c holds %q after a's release; want 10.88.0.0/24", got)
	}
	if ev := s.recorded(); countPrefix(ev, "Normal CIDRAssigned") != 1 || countPrefix(ev, "Warning") != 0 {
		t.Fatalf("events after the release: %q; want one CIDRAssigned", ev)
	}
}

func TestWaitingIsReportedAgainOnlyAfterTheConditionChanged(t *testing.T) {
	s := newStepper(t, "10.88.0.0/24", 24, node("a", "10.88.0.0/24"))
	s.put(node("d", ""))
	s.put(node("e", ""))
	s.drain()
	if ev := s.recorded(); countPrefix(ev, "Warning CIDRNotAvailable") != 2 {
		t.Fatalf("two nodes refused: events %q; want one CIDRNotAvailable each", ev)
	}
	s.put(node("e", ""))
	s.drain()
	if ev := s.recorded(); len(ev) != 0 {
		t.Fatalf("e synced again while still waiting: events %q; want none", ev)
	}
	// e goes away and comes back: a new episode of waiting, reported anew.
	s.remove("e")
	s.drain()
	s.put(node("e", ""))
	s.drain()
	if ev := s.recorded(); len(ev) != 1 || !strings.Contains(ev[0], "Node e:") {
		t.Fatalf("e re-registered into a full range: events %q; want one CIDRNotAvailable for e", ev)
	}
}
