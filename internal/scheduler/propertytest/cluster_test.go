package propertytest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	watchtools "k8s.io/client-go/tools/watch"
)

// countingBinds wraps a client configuration so that it counts the
// bindings the server accepted (201) for this client.
func countingBinds(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err == nil && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/binding") && resp.StatusCode == http.StatusCreated {
				n.Add(1)
			}
			return resp, err
		})
	})
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The test's 20 small nodes: zones a and b, a few with SSDs, a few holding
// at most 40 pods, the last four dedicated (tainted) and the very last also
// under NoExecute maintenance, which only pods tolerating everything accept.
const numNodes = 20

// testNodes are numNodes varied nodes, each with 1/shrink of a full node's
// room, so that a smaller workload still fills them.
func testNodes(shrink int) []*v1.Node {
	nodes := make([]*v1.Node, numNodes)
	for i := range nodes {
		pods := 110
		if i%7 == 3 {
			pods = 40
		}
		labels := map[string]string{"zone": "a"}
		if i >= numNodes/2 {
			labels["zone"] = "b"
		}
		if i%5 == 0 {
			labels["disk"] = "ssd"
		}
		var taints []v1.Taint
		if i >= numNodes-4 {
			taints = append(taints, v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule})
		}
		if i == numNodes-1 {
			taints = append(taints, v1.Taint{Key: "maintenance", Value: "true", Effect: v1.TaintEffectNoExecute})
		}
		alloc := v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(int64(8000/shrink), resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(int64(16<<30/shrink), resource.BinarySI),
			v1.ResourcePods:   *resource.NewQuantity(int64((pods+shrink-1)/shrink), resource.DecimalSI),
		}
		nodes[i] = &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", i), Labels: labels},
			Spec:       v1.NodeSpec{Taints: taints},
			Status: v1.NodeStatus{Allocatable: alloc, Capacity: alloc,
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}},
		}
	}
	return nodes
}

// nodeWatches records, for every node, what a watch of the pods bound to
// it (fieldSelector spec.nodeName, as an agent watches) delivers, resuming
// after any cut-off from the last resourceVersion it saw.
type nodeWatches struct {
	mu      sync.Mutex
	history map[string][]Event
	errs    []error
	wg      sync.WaitGroup
}

func watchNodes(ctx context.Context, cs kubernetes.Interface, nodes []*v1.Node, fromRV string) (*nodeWatches, error) {
	w := &nodeWatches{history: map[string][]Event{}}
	for _, n := range nodes {
		selector := fields.OneTermEqualSelector("spec.nodeName", n.Name).String()
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, fromRV, podWatcher{cs: cs, selector: selector})
		if err != nil {
			return nil, fmt.Errorf("watch pods of %s: %w", n.Name, err)
		}
		w.wg.Add(1)
		go w.record(n.Name, rw)
	}
	return w, nil
}

func (w *nodeWatches) record(node string, rw *watchtools.RetryWatcher) {
	defer w.wg.Done()
	defer rw.Stop()
	for ev := range rw.ResultChan() {
		w.mu.Lock()
		pod, ok := ev.Object.(*v1.Pod)
		switch {
		case ev.Type == watch.Error || !ok:
			w.errs = append(w.errs, fmt.Errorf("watch of %s: %v event %v", node, ev.Type, ev.Object))
		default:
			rv, err := strconv.ParseInt(pod.ResourceVersion, 10, 64)
			if err != nil {
				w.errs = append(w.errs, fmt.Errorf("watch of %s: resourceVersion %q: %w", node, pod.ResourceVersion, err))
			}
			w.history[node] = append(w.history[node], Event{Type: string(ev.Type), Revision: rv, Pod: pod})
		}
		w.mu.Unlock()
	}
}

// snapshot copies what has been recorded so far.
func (w *nodeWatches) snapshot() (map[string][]Event, []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string][]Event, len(w.history))
	for k, v := range w.history {
		out[k] = append([]Event(nil), v...)
	}
	return out, append([]error(nil), w.errs...)
}

type podWatcher struct {
	cs       kubernetes.Interface
	selector string
}

func (p podWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = p.selector
	return p.cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
}
