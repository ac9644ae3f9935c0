package propertytest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/scheduler"
	"github.com/berth/berth/internal/testkit/apitest"
	"github.com/berth/berth/internal/testkit/wait"
)

var seedFlag = flag.Int64("seed", 0, "random seed of the property test's workload (0: from the clock; the seed used is logged)")

// workloadSize is how much TestNoNodeEverSeesAViolatingSet does.
type workloadSize struct {
	pods, binders, bindsPerBinder, deleted int
	shrink                                 int           // nodes get 1/shrink of their room
	round                                  time.Duration // awaitSettled's wait before touching the nodes again
	// The schedulers' back-off bounds (0: the scheduler's defaults, 1 s to
	// 10 s). A round must outlast the longest back-off: the pods a touch
	// re-queues come back only after theirs.
	initialBackoff, maxBackoff time.Duration
}

// workload is the full size, or with -short (make unit) a quarter of it on
// nodes with a quarter of the room, so that nodes fill up as much. -short
// also divides the back-off by ten and the round with it (six times the
// longest back-off in both sizes): with the default back-off, the short run
// spent most of its time waiting out back-offs and round deadlines, not
// scheduling.
func workload() workloadSize {
	if testing.Short() {
		return workloadSize{pods: 500, binders: 4, bindsPerBinder: 62, deleted: 15, shrink: 4, round: 6 * time.Second,
			initialBackoff: 100 * time.Millisecond, maxBackoff: time.Second}
	}
	return workloadSize{pods: 2000, binders: 4, bindsPerBinder: 250, deleted: 60, shrink: 1, round: time.Minute}
}

// TestNoNodeEverSeesAViolatingSet is the binding property: two scheduler
// instances and several raw binders race to bind 2000 random pods onto 20
// small nodes while some pods are deleted; replaying every node's own watch
// history, at no revision does a node's set of pods break a constraint, and
// at the end every pod is bound or Pending with the scheduler's correct
// explanation of why it fits nowhere.
func TestNoNodeEverSeesAViolatingSet(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -seed %d)", seed, seed)
	r := rand.New(rand.NewSource(seed))

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cfg := apitest.Start(t)
	cs := kubernetes.NewForConfigOrDie(cfg)

	size := workload()
	nodes := testNodes(size.shrink)
	for _, n := range nodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node: %v", err)
		}
	}
	list, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watches, err := watchNodes(ctx, cs, nodes, list.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}

	schedCtx, stopSchedulers := context.WithCancel(ctx)
	var schedulersDone sync.WaitGroup
	schedulerBinds := []*atomic.Int64{{}, {}}
	var sweepRequeues atomic.Int64
	for i, binds := range schedulerBinds {
		client := kubernetes.NewForConfigOrDie(countingBinds(cfg, binds))
		s := scheduler.New(scheduler.Config{Client: client, Logger: countingSweeps(t, &sweepRequeues).With("scheduler", i),
			InitialBackoff: size.initialBackoff, MaxBackoff: size.maxBackoff})
		schedulersDone.Add(1)
		go func() {
			defer schedulersDone.Done()
			if err := s.Run(schedCtx); err != nil {
				t.Errorf("scheduler %d: %v", i, err)
			}
		}()
	}
	defer func() { stopSchedulers(); schedulersDone.Wait() }()

	pods := make([]*v1.Pod, size.pods)
	for i := range pods {
		pods[i] = randomPod(r, i)
	}
	deleted := runWorkload(ctx, t, cs, r, size, pods, nodes)

	final := awaitSettled(ctx, t, cs, size.round, nodes, deleted)
	checkWatchHistories(ctx, t, watches, nodes, final)
	stats := summarize(t, final, deleted)
	for i, binds := range schedulerBinds {
		stats += fmt.Sprintf(", scheduler %d bound %d", i, binds.Load())
		if binds.Load() == 0 {
			t.Errorf("scheduler %d bound nothing: the two instances did not both take part", i)
		}
	}
	t.Log(stats)
	if n := sweepRequeues.Load(); n != 0 {
		t.Errorf("the schedulers' sweeps had to re-queue %d pending pods: some path dropped them", n)
	}
}

// runWorkload creates the pods while raw binders race the schedulers, and
// deletes some of them part-way; it returns the names deleted.
func runWorkload(ctx context.Context, t *testing.T, cs kubernetes.Interface, r *rand.Rand, size workloadSize, pods []*v1.Pod, nodes []*v1.Node) map[string]bool {
	t.Helper()
	var created atomic.Int64
	var tally binderTally
	var wg sync.WaitGroup
	for range size.binders {
		br := rand.New(rand.NewSource(r.Int63()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			rawBinder(ctx, cs, br, pods, nodes, &created, size.bindsPerBinder, &tally)
		}()
	}
	deleted := map[string]bool{}
	for len(deleted) < size.deleted {
		deleted[pods[r.Intn(size.pods/2)].Name] = true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Once half the pods exist, many of those named are bound: deleting
		// them must release their share while binding goes on.
		if err := wait.Poll(ctx, 5*time.Minute, "half the pods to be created", func(context.Context) error {
			if n := created.Load(); n < int64(size.pods/2) {
				return fmt.Errorf("%d created", n)
			}
			return nil
		}); err != nil {
			t.Error(err)
			return
		}
		names := make([]string, 0, len(deleted))
		for name := range deleted {
			names = append(names, name)
		}
		if err := deletePods(ctx, cs, names); err != nil {
			t.Errorf("deleting pods: %v", err)
		}
	}()
	if err := createPods(ctx, cs, pods, 16, &created); err != nil {
		t.Fatalf("creating pods: %v", err)
	}
	wg.Wait()
	t.Logf("raw binders: %d bound, %d conflict (409), %d invalid (422), %d timed out (504)", tally.bound, tally.conflict, tally.invalid, tally.timedOut)
	for _, w := range tally.wrong {
		t.Errorf("raw binder: %s", w)
	}
	if tally.bound == 0 || tally.conflict == 0 || tally.invalid == 0 {
		t.Errorf("raw binders saw %d binds, %d 409s, %d 422s: the race did not exercise every answer", tally.bound, tally.conflict, tally.invalid)
	}
	return deleted
}

// clusterState is the pods that exist and, per node, those bound there.
type clusterState struct {
	pods      []v1.Pod
	bound     map[string][]*v1.Pod
	nodes     []*v1.Node
	expected  map[string]string // pending pod -> the message the scheduler must show
	listedRV  string
	notSettle string // why the state is not settled yet ("" when it is)
}

// awaitSettled waits until every pod is bound, or Pending with exactly the
// Unschedulable message the final cluster state calls for. Binds do not
// make a scheduler revisit pods it gave up on (as in kube-scheduler), so
// their messages may describe an earlier, emptier cluster: touching every
// node is the cluster event that makes both schedulers re-examine them.
func awaitSettled(ctx context.Context, t *testing.T, cs kubernetes.Interface, round time.Duration, nodes []*v1.Node, deleted map[string]bool) *clusterState {
	t.Helper()
	for n := 1; ; n++ {
		if err := touchNodes(ctx, cs, nodes, n); err != nil {
			t.Fatal(err)
		}
		var state *clusterState
		why := "not read yet"
		err := wait.Poll(ctx, round, "the cluster to settle", func(ctx context.Context) error {
			s, err := readState(ctx, cs, nodes, deleted)
			switch {
			case err != nil && ctx.Err() != nil && why != "not read yet":
				// The poll's own deadline cut this read short: keep the
				// reason the previous read gave.
			case err != nil:
				why = err.Error()
			case s.notSettle != "":
				why = s.notSettle
			default:
				state = s
				return nil
			}
			return errors.New(why)
		})
		if err == nil {
			return state
		}
		if n == 4 || ctx.Err() != nil {
			t.Fatalf("the cluster did not settle after %d rounds: %v", n, err)
		}
		t.Logf("round %d: not settled (%s); touching nodes again", n, why)
	}
}

func touchNodes(ctx context.Context, cs kubernetes.Interface, nodes []*v1.Node, round int) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"propertytest.berth.io/round":"%d"}}}`, round)
	for _, n := range nodes {
		if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("touch node %s: %w", n.Name, err)
		}
	}
	return nil
}

// readState lists pods and nodes and judges whether the cluster has settled.
func readState(ctx context.Context, cs kubernetes.Interface, want []*v1.Node, deleted map[string]bool) (*clusterState, error) {
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s := &clusterState{pods: list.Items, bound: map[string][]*v1.Pod{}, nodes: want, expected: map[string]string{}, listedRV: list.ResourceVersion}
	if err := checkNodesUnchanged(ctx, cs, want); err != nil {
		return nil, err
	}
	for i := range s.pods {
		p := &s.pods[i]
		if deleted[p.Name] {
			return nil, fmt.Errorf("pod %s was deleted but still exists", p.Name)
		}
		if p.Spec.NodeName != "" {
			s.bound[p.Spec.NodeName] = append(s.bound[p.Spec.NodeName], p)
		}
	}
	if want := workload().pods; len(s.pods)+len(deleted) != want {
		return nil, fmt.Errorf("%d pods exist and %d were deleted; want %d in all", len(s.pods), len(deleted), want)
	}
	for i := range s.pods {
		p := &s.pods[i]
		if p.Spec.NodeName != "" {
			continue
		}
		msg, fits := UnschedulableMessage(p, want, s.bound)
		cond := podScheduled(p)
		switch {
		case fits:
			s.notSettle = fmt.Sprintf("pending pod %s fits a node", p.Name)
		case cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != v1.PodReasonUnschedulable:
			s.notSettle = fmt.Sprintf("pending pod %s has PodScheduled %+v", p.Name, cond)
		case cond.Message != msg:
			s.notSettle = fmt.Sprintf("pending pod %s says %q, want %q", p.Name, cond.Message, msg)
		}
		s.expected[p.Name] = msg
	}
	return s, nil
}

// checkNodesUnchanged makes sure the constraints the replay assumes for the
// whole run (labels, taints, allocatable) are still the nodes' own.
func checkNodesUnchanged(ctx context.Context, cs kubernetes.Interface, want []*v1.Node) error {
	for _, w := range want {
		n, err := cs.CoreV1().Nodes().Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !apiequality.Semantic.DeepEqual(n.Labels, w.Labels) || !apiequality.Semantic.DeepEqual(n.Spec.Taints, w.Spec.Taints) ||
			!apiequality.Semantic.DeepEqual(n.Status.Allocatable, w.Status.Allocatable) {
			return fmt.Errorf("node %s changed its constraints during the run", w.Name)
		}
	}
	return nil
}

func podScheduled(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// checkWatchHistories waits until each node's watch has delivered the
// node's final set, then replays each history and reports every violation.
func checkWatchHistories(ctx context.Context, t *testing.T, watches *nodeWatches, nodes []*v1.Node, final *clusterState) {
	t.Helper()
	var histories map[string][]Event
	err := wait.Poll(ctx, 3*time.Minute, "the node watches to deliver the final sets", func(context.Context) error {
		var errs []error
		histories, errs = watches.snapshot()
		if len(errs) > 0 {
			t.Fatalf("node watches failed: %v", errs)
		}
		for _, n := range nodes {
			if !sameSet(finalSet(histories[n.Name]), final.bound[n.Name]) {
				return fmt.Errorf("node %s's watch has not delivered its final set", n.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, n := range nodes {
		events += len(histories[n.Name])
		for _, v := range Replay(n, histories[n.Name]) {
			t.Errorf("violation: %s", v)
		}
	}
	t.Logf("replayed %d watch events on %d nodes", events, len(nodes))
}

// finalSet is the set of pods a history leaves on its node, by UID, at
// their last resourceVersion.
func finalSet(history []Event) map[types.UID]string {
	set := map[types.UID]string{}
	for _, ev := range history {
		if ev.Type == "DELETED" {
			delete(set, ev.Pod.UID)
			continue
		}
		set[ev.Pod.UID] = ev.Pod.ResourceVersion
	}
	return set
}

func sameSet(got map[types.UID]string, want []*v1.Pod) bool {
	if len(got) != len(want) {
		return false
	}
	for _, p := range want {
		if got[p.UID] != p.ResourceVersion {
			return false
		}
	}
	return true
}

// summarize checks that bound pods say so and that the run was not vacuous:
// some pods bound, some pending, host ports bound, every node used.
func summarize(t *testing.T, final *clusterState, deleted map[string]bool) string {
	t.Helper()
	bound, withPorts := 0, 0
	for i := range final.pods {
		p := &final.pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		if len(hostPorts(p)) > 0 {
			withPorts++
		}
		if c := podScheduled(p); c == nil || c.Status != v1.ConditionTrue {
			t.Errorf("bound pod %s has PodScheduled %+v", p.Name, c)
		}
	}
	pending := len(final.pods) - bound
	if bound == 0 || pending == 0 || withPorts == 0 || len(final.bound) < numNodes-1 {
		t.Errorf("vacuous run: %d bound (%d with host ports) on %d nodes, %d pending", bound, withPorts, len(final.bound), pending)
	}
	return "final revision " + final.listedRV + ": " + strconv.Itoa(bound) + " bound (" + strconv.Itoa(withPorts) + " with host ports), " +
		strconv.Itoa(pending) + " pending with a correct reason, " + strconv.Itoa(len(deleted)) + " deleted"
}
