package scheduler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// Each test here reproduces a way a pending pod could fall out of the
// scheduler (never bound, never reported) before the fix named with it.

// convergeLimit only bounds a broken run; nothing is asserted about time.
const convergeLimit = 60 * time.Second

func runScheduler(t *testing.T, client kubernetes.Interface) *Scheduler {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := New(Config{Client: client})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

func create(t *testing.T, client *fake.Clientset, objs ...runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *v1.Node:
			_, err = client.CoreV1().Nodes().Create(context.Background(), o, metav1.CreateOptions{})
		case *v1.Pod:
			_, err = client.CoreV1().Pods(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func waitBound(t *testing.T, client *fake.Clientset, name string) {
	t.Helper()
	err := wait.PollTrue(context.Background(), convergeLimit, "pod "+name+" to be bound", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})
	if err != nil {
		t.Fatalf("pod %s was never bound: %v", name, err)
	}
}

// hangingStatusPatches is a clientset whose pods/status patches never get
// an answer: each waits for its context to end, as a request to an API
// server that accepted it and never replied would.
type hangingStatusPatches struct {
	kubernetes.Interface
	entered chan struct{}
}

// IsWatchListSemanticsUnSupported passes on the fake clientset's answer,
// which informers ask for (the fake cannot stream initial events).
func (c hangingStatusPatches) IsWatchListSemanticsUnSupported() bool { return true }

func (c hangingStatusPatches) CoreV1() typedcorev1.CoreV1Interface {
	return hangingCoreV1{c.Interface.CoreV1(), c.entered}
}

type hangingCoreV1 struct {
	typedcorev1.CoreV1Interface
	entered chan struct{}
}

func (c hangingCoreV1) Pods(ns string) typedcorev1.PodInterface {
	return hangingPods{c.CoreV1Interface.Pods(ns), c.entered}
}

type hangingPods struct {
	typedcorev1.PodInterface
	entered chan struct{}
}

func (p hangingPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Pod, error) {
	if len(subresources) == 0 || subresources[0] != "status" {
		return p.PodInterface.Patch(ctx, name, pt, data, opts, subresources...)
	}
	select {
	case p.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// Before the fix, the goroutine writing a pod's Unschedulable condition held
// the pod's queue key until the write returned: while the request hung (the
// write had no time bound either), every later event for the pod (here, a
// node that now fits it) only marked the key dirty, and the pod was never
// tried again.
func TestPodIsRetriedWhileItsUnschedulableConditionIsStillBeingWritten(t *testing.T) {
	fakeClient := fake.NewClientset()
	fakeClient.PrependReactor("create", "pods", bindingReactor(fakeClient))
	create(t, fakeClient, testNode("a", "1", "4Gi"), testPod("big", "2", "1Gi"))
	client := hangingStatusPatches{Interface: fakeClient, entered: make(chan struct{}, 1)}
	runScheduler(t, client)

	select {
	case <-client.entered:
	case <-time.After(convergeLimit):
		t.Fatal("the scheduler never judged the pod unschedulable")
	}
	create(t, fakeClient, testNode("b", "4", "4Gi"))
	waitBound(t, fakeClient, "big")
}

// Before the fix, a bind answered 404 dropped the pod for good, though a
// 404 says nothing certain about the pod (a proxy, or a server behind the
// informer, can answer it); the informer's view decides instead.
func TestBindAnsweredNotFoundIsRetriedWhileThePodExists(t *testing.T) {
	client := fake.NewClientset()
	var once sync.Once
	client.PrependReactor("create", "pods", bindingReactor(client))
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		notFound := false
		if action.GetSubresource() == "binding" {
			once.Do(func() { notFound = true })
		}
		if notFound {
			return true, nil, apierrors.NewNotFound(v1.Resource("pods"), "p")
		}
		return false, nil, nil
	})
	create(t, client, testNode("a", "4", "4Gi"), testPod("p", "1", "1Gi"))
	runScheduler(t, client)
	waitBound(t, client, "p")
}

// Before the fix, assuming a pod that the watch had meanwhile reported
// bound elsewhere replaced that binding in the cache, and the failed bind's
// unassume then dropped the pod from its node's usage altogether.
func TestFailedAssumptionKeepsAPodObservedBound(t *testing.T) {
	c := newCache()
	c.setNode(testNode("a", "4", "4Gi"))
	c.setNode(testNode("b", "4", "4Gi"))
	pending := testPod("p", "1", "1Gi")
	bound := pending.DeepCopy()
	bound.Spec.NodeName = "b"

	c.observePod(bound)     // another binder won while this cycle decided
	c.assume(pending, "a")  // the cycle's decision
	c.unassume(pending.UID) // its bind: 409, already bound
	if !c.isAccounted(pending.UID) {
		t.Fatal("the pod bound to b is no longer counted anywhere")
	}
	var usedOnB int64
	c.withNodes("", func(nodes nodeList, _ placedPods) {
		for i := range nodes.Len() {
			if v := nodes.At(i); v.node.Node.Name == "b" {
				usedOnB = v.usage.Requested.MilliCPU
			}
		}
	})
	if usedOnB != 1000 {
		t.Errorf("node b counts %dm cpu, want 1000m", usedOnB)
	}
}

// Before the fix, a cluster change (a node added, a pod gone) that came
// after a cycle had judged a pod unschedulable, but before the cycle parked
// it, retried only the pods already parked: this pod then waited for the
// next change or unschedulableRetry (5 minutes) though it might fit now.
func TestChangeDuringACycleRetriesThePodItJudged(t *testing.T) {
	s := New(Config{Client: fake.NewClientset()})
	defer s.queue.shutDown()
	const key = "default/p"

	seen := s.clusterGeneration() // the cycle starts
	s.retryUnschedulable()        // a node is added meanwhile
	s.waitForClusterChange(key, seen, false, "0/1 nodes are available")

	s.mu.Lock()
	_, parked := s.unschedulable[key]
	s.mu.Unlock()
	if parked {
		t.Fatal("the pod was parked until the next cluster change")
	}
	delivered := make(chan delivery, 1)
	go func() {
		if d, ok := s.queue.get(); ok {
			delivered <- d
		}
	}()
	select {
	case d := <-delivered:
		if d.key != key {
			t.Fatalf("delivered %q, want %q", d.key, key)
		}
	case <-time.After(convergeLimit):
		t.Fatal("the pod was not retried after its back-off")
	}
}

// With no change during the cycle, the pod waits for one.
func TestUnschedulablePodWaitsForAClusterChange(t *testing.T) {
	s := New(Config{Client: fake.NewClientset()})
	defer s.queue.shutDown()
	const key = "default/p"

	s.waitForClusterChange(key, s.clusterGeneration(), false, "0/1 nodes are available")
	s.mu.Lock()
	_, parked := s.unschedulable[key]
	s.mu.Unlock()
	if !parked || !s.queue.holds(key) {
		t.Fatalf("parked %v, held %v; want both", parked, s.queue.holds(key))
	}
}

// The sweep queues again exactly the pending pods of this scheduler that
// the handler processed and nothing holds: not bound, foreign, terminating,
// queued or assumed ones, nor one the handler has yet to process (the
// informer's store runs ahead of its handlers).
func TestSweepRequeuesOnlyPendingPodsNothingHolds(t *testing.T) {
	bound := testPod("bound", "1", "1Gi", func(p *v1.Pod) { p.Spec.NodeName = "a" })
	foreign := testPod("foreign", "1", "1Gi", func(p *v1.Pod) { p.Spec.SchedulerName = "other" })
	deleting := testPod("deleting", "1", "1Gi", func(p *v1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		p.Finalizers = []string{"example.com/keep"}
	})
	queued, assumed, lost := testPod("queued", "1", "1Gi"), testPod("assumed", "1", "1Gi"), testPod("lost", "1", "1Gi")
	unhandled := testPod("unhandled", "1", "1Gi")
	client := fake.NewClientset(bound, foreign, deleting, queued, assumed, lost, unhandled)
	s := New(Config{Client: client})
	defer s.queue.shutDown()
	informer := s.factory.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	defer close(stop)
	s.factory.Start(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	// What the handler did: it processed every pod but unhandled, and the
	// path under test lost one of them.
	for _, p := range []*v1.Pod{bound, foreign, deleting, queued, assumed, lost} {
		stored, err := s.pods.Pods(p.Namespace).Get(p.Name)
		if err != nil {
			t.Fatalf("informer lacks %s: %v", keyOf(p), err)
		}
		s.noteHandled(stored, s.responsibleFor(stored))
	}
	s.queue.add(keyOf(queued))
	s.cache.setNode(testNode("a", "4", "4Gi"))
	if !s.cache.assume(assumed, "a") {
		t.Fatal("assume refused")
	}

	if n := s.sweep(); n != 1 || !s.queue.holds(keyOf(lost)) {
		t.Fatalf("sweep re-queued %d pods (lost held: %v); want only %s", n, s.queue.holds(keyOf(lost)), keyOf(lost))
	}
	if n := s.sweep(); n != 0 {
		t.Fatalf("a second sweep re-queued %d pods; the first left them held", n)
	}
	if s.queue.holds(keyOf(unhandled)) {
		t.Fatalf("the sweep queued %s, which its handler has yet to process", keyOf(unhandled))
	}
	// Once the handler processes it, it queues it itself.
	stored, err := s.pods.Pods(unhandled.Namespace).Get(unhandled.Name)
	if err != nil {
		t.Fatal(err)
	}
	s.onPod(stored)
	if !s.queue.holds(keyOf(unhandled)) {
		t.Fatalf("the handler did not queue %s", keyOf(unhandled))
	}
}

// A pod the API server has but the informer never delivered is reported on
// the second check that finds it missing; pods the informer has, bound
// pods and other schedulers' pods are not.
func TestInformerCheckReportsAPodTheInformerNeverDelivered(t *testing.T) {
	seen, missed := testPod("seen", "1", "1Gi"), testPod("missed", "1", "1Gi")
	bound := testPod("bound", "1", "1Gi", func(p *v1.Pod) { p.Spec.NodeName = "a" })
	foreign := testPod("foreign", "1", "1Gi", func(p *v1.Pod) { p.Spec.SchedulerName = "other" })
	s := New(Config{Client: fake.NewClientset(seen, missed, bound, foreign)})
	defer s.queue.shutDown()
	// The informer is not started: its store holds only what is put here.
	if err := s.factory.Core().V1().Pods().Informer().GetIndexer().Add(seen); err != nil {
		t.Fatal(err)
	}

	absent, warned := s.checkInformer(context.Background(), nil)
	if warned != 0 || len(absent) != 1 || !absent[missed.UID] {
		t.Fatalf("first check: warned %d, absent %v; want 0 and only %s", warned, absent, missed.UID)
	}
	if _, warned = s.checkInformer(context.Background(), absent); warned != 1 {
		t.Fatalf("second check warned about %d pods, want 1 (%s)", warned, missed.Name)
	}
}
