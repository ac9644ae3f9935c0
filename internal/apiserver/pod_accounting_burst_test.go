package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/fit"
	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/store/etcd"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

// usageTxnCounter is the real store, counting the transactions that write a
// node usage record and those of them that conflicted.
type usageTxnCounter struct {
	*etcd.Store // kept concrete: the server uses its other interfaces too
	txns        atomic.Int64
	conflicts   atomic.Int64
}

func (c *usageTxnCounter) Txn(ctx context.Context, ops []store.Op) (int64, error) {
	rev, err := c.Store.Txn(ctx, ops)
	for _, op := range ops {
		if strings.HasPrefix(op.Key, nodeUsagePrefix) && !op.CheckOnly {
			c.txns.Add(1)
			if errors.Is(err, store.ErrConflict) {
				c.conflicts.Add(1)
			}
			break
		}
	}
	return rev, err
}

// burst runs n requests at once (released together) and returns their errors.
func burst(n int, request func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = request(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// A node's bind, create-bound and release transactions take turns in the
// server, so a burst of them to one node with room for all never conflicts
// within the server: each request succeeds at its first transaction, one
// usage-record write per pod. (Before the turns, 128 binds in flight to one
// node took several transactions each and some failed with 409.)
func TestBurstsToOneNodeWriteItsUsageOncePerPod(t *testing.T) {
	t.Parallel()
	counter := &usageTxnCounter{}
	s := newTestServerWith(t, func(c *Config) {
		counter.Store = c.Store.(*etcd.Store)
		c.Store = counter
	})
	ctx := testContext(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resourceQuantity("1000"), corev1.ResourceMemory: resourceQuantity("1Ti"), corev1.ResourcePods: resourceQuantity("1000"),
	}}}
	if _, err := s.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := s.client.CoreV1().Pods("default")
	const binds, createdBound = 128, 64
	for i := range binds {
		if _, err := pods.Create(ctx, requestingPod(fmt.Sprintf("bind-%d", i), "100m", 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	phase := func(name string, n int, request func(i int) error) {
		t.Helper()
		txns, conflicts, rev := counter.txns.Load(), counter.conflicts.Load(), storeRevision(t, s)
		failed := 0
		for i, err := range burst(n, request) {
			if err != nil {
				failed++
				t.Errorf("%s %d: %v", name, i, err)
			}
		}
		gotTxns, gotConflicts := counter.txns.Load()-txns, counter.conflicts.Load()-conflicts
		t.Logf("%s: %d requests, %d failed, %d usage transactions, %d conflicted, store revision +%d",
			name, n, failed, gotTxns, gotConflicts, storeRevision(t, s)-rev)
		if gotTxns != int64(n) || gotConflicts != 0 {
			t.Errorf("%s: %d usage transactions (%d conflicted) for %d pods, want one each", name, gotTxns, gotConflicts, n)
		}
	}
	phase("bind", binds, func(i int) error {
		return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bind-%d", i)},
			Target: corev1.ObjectReference{Kind: "Node", Name: "big"}}, metav1.CreateOptions{})
	})
	phase("create bound", createdBound, func(i int) error {
		p := requestingPod(fmt.Sprintf("bound-%d", i), "100m", 0)
		p.Spec.NodeName = "big"
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	assertUsage(t, s, "big", binds+createdBound)

	zero := int64(0)
	phase("delete", binds, func(i int) error {
		return pods.Delete(ctx, fmt.Sprintf("bind-%d", i), metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	assertUsage(t, s, "big", createdBound)
}

// assertUsage checks node's stored usage record counts pods pods of 100m.
func assertUsage(t *testing.T, s *testServer, node string, pods int) {
	t.Helper()
	kv, err := s.store.Get(testContext(t), nodeUsagePrefix+node)
	if err != nil {
		t.Fatalf("usage record of %s: %v", node, err)
	}
	var u fit.Usage
	if err := json.Unmarshal(kv.Value, &u); err != nil {
		t.Fatal(err)
	}
	if want := (fit.Resources{MilliCPU: 100 * int64(pods), Pods: int64(pods)}); !reflect.DeepEqual(u.Requested, want) {
		t.Errorf("usage record of %s: %+v, want %+v", node, u.Requested, want)
	}
}

// A release waiting for its node's turn gives up when its request's context
// ends, and writes nothing.
func TestReleaseWaitingForItsNodeTurnStopsWithItsContext(t *testing.T) {
	t.Parallel()
	st := etcdtest.New(t)
	a := newPodAccounting(st, nil, nil)
	hold, err := a.turns.wait(testContext(t), "n1")
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	const key = "/registry/pods/default/p"
	podRev, err := st.Create(testContext(t), key, []byte("pod"))
	if err != nil {
		t.Fatal(err)
	}
	old := requestingPod("p", "1", 0)
	old.Spec.NodeName = "n1"

	ctx, cancel := context.WithCancel(testContext(t))
	released := make(chan error, 1)
	go func() {
		_, err := a.releasing(ctx, key, podRev, old, nil)
		released <- err
	}()
	waitForUsers(t, a.turns, "n1", 2)
	cancel()
	if err := <-released; !errors.Is(err, context.Canceled) {
		t.Fatalf("release cancelled while waiting for n1's turn: %v, want context.Canceled", err)
	}
	if rev, err := st.CurrentRevision(testContext(t)); err != nil || rev != podRev {
		t.Fatalf("store revision %d (%v) after a cancelled release, want %d", rev, err, podRev)
	}
}

// Two servers sharing etcd each run their binds to a node in turns, but not
// with each other's: their transactions still conflict, and the retry from
// the store must land every bind and keep the record exact.
func TestBurstsToOneNodeFromTwoServersAllLand(t *testing.T) {
	t.Parallel()
	counter := &usageTxnCounter{}
	s1 := newTestServerWith(t, func(c *Config) {
		counter.Store = c.Store.(*etcd.Store)
		c.Store = counter
	})
	s2 := newTestServerWith(t, func(c *Config) { c.Store = counter })
	ctx := testContext(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resourceQuantity("1000"), corev1.ResourceMemory: resourceQuantity("1Ti"), corev1.ResourcePods: resourceQuantity("1000"),
	}}}
	if _, err := s1.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const binds = 128
	for i := range binds {
		if _, err := s1.client.CoreV1().Pods("default").Create(ctx, requestingPod(fmt.Sprintf("bind-%d", i), "100m", 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	servers := []*testServer{s1, s2}
	failed := 0
	for i, err := range burst(binds, func(i int) error {
		return servers[i%2].client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bind-%d", i)},
			Target: corev1.ObjectReference{Kind: "Node", Name: "big"}}, metav1.CreateOptions{})
	}) {
		if err != nil {
			failed++
			t.Errorf("bind %d through server %d: %v", i, i%2+1, err)
		}
	}
	t.Logf("%d binds through two servers: %d failed, %d usage transactions, %d conflicted", binds, failed, counter.txns.Load(), counter.conflicts.Load())
	assertUsage(t, s1, "big", binds)
}

// A bind waiting for its node's turn gives up when its request's context
// ends: a 504 Timeout, as for a store call cut short, and nothing written.
func TestBindWaitingForItsNodeTurnTimesOutWithItsContext(t *testing.T) {
	t.Parallel()
	st := etcdtest.New(t)
	a := newPodAccounting(st, nil, nil)
	// The wait ends before the pod is read: only the error mapping is used.
	b := &bindingREST{pods: &objectStore{res: &resource{gvr: corev1.SchemeGroupVersion.WithResource("pods")}, store: a}, accounting: a}
	hold, err := a.turns.wait(testContext(t), "n1")
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	before, err := st.CurrentRevision(testContext(t))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(testContext(t))
	bound := make(chan error, 1)
	go func() {
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
		_, err := b.Create(ctx, "p", binding, nil, &metav1.CreateOptions{})
		bound <- err
	}()
	waitForUsers(t, a.turns, "n1", 2)
	cancel()
	if err := <-bound; !apierrors.IsTimeout(err) {
		t.Fatalf("bind cancelled while waiting for n1's turn: %v, want a 504 Timeout", err)
	}
	if after, err := st.CurrentRevision(testContext(t)); err != nil || after != before {
		t.Fatalf("store revision %d -> %d (%v) after a cancelled bind", before, after, err)
	}
}
