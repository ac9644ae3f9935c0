package propertytest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const namespace = "default"

// randomPod is one pod of the workload: random cpu and memory requests
// (sometimes none), and now and then a host port (TCP or UDP, on every
// address or on one loopback address), a toleration of the dedicated
// taint or of everything, or a node selector.
func randomPod(r *rand.Rand, i int) *v1.Pod {
	reqs := v1.ResourceList{}
	if r.Intn(10) > 0 {
		reqs[v1.ResourceCPU] = *resource.NewMilliQuantity(int64(10+r.Intn(240)), resource.DecimalSI)
	}
	if r.Intn(10) > 0 {
		reqs[v1.ResourceMemory] = *resource.NewQuantity(int64(16+r.Intn(496))<<20, resource.BinarySI)
	}
	c := v1.Container{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{Requests: reqs}}
	if r.Intn(6) == 0 {
		proto := v1.ProtocolTCP
		if r.Intn(5) == 0 {
			proto = v1.ProtocolUDP
		}
		ip := []string{"", "", "", "127.0.0.1", "127.0.0.2"}[r.Intn(5)]
		c.Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: int32(30000 + r.Intn(12)), HostIP: ip, Protocol: proto}}
	}
	spec := v1.PodSpec{Containers: []v1.Container{c}}
	switch r.Intn(20) {
	case 0, 1:
		spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	case 2:
		spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	}
	switch r.Intn(10) {
	case 0:
		spec.NodeSelector = map[string]string{"zone": "a"}
	case 1:
		spec.NodeSelector = map[string]string{"disk": "ssd"}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("p-%04d", i)}, Spec: spec}
}

// createPods creates pods with workers goroutines, counting how many exist
// so far in created (binders pick among the newest).
func createPods(ctx context.Context, cs kubernetes.Interface, pods []*v1.Pod, workers int, created *atomic.Int64) error {
	next := make(chan *v1.Pod)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create %s: %w", p.Name, err)
					return
				}
				created.Add(1)
			}
		}()
	}
	var first error
	for _, p := range pods {
		select {
		case next <- p:
		case first = <-errs:
		}
		if first != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if first == nil && len(errs) > 0 {
		first = <-errs
	}
	return first
}

// binderTally counts what raw binders saw.
type binderTally struct {
	mu                                 sync.Mutex
	bound, conflict, invalid, notFound int
	// timedOut counts 504s: a store too slow to give the node's turn
	// within the request's minute (a loaded CI disk) is a legitimate
	// answer, and an undecided one, which the watch histories judge.
	timedOut int
	wrong    []string // answers the server must never give
}

// rawBinder posts bindings of random recent pods to random nodes, racing
// the schedulers, until it has made attempts. The server may answer 201,
// 409 (already bound, or does not fit now), 404 (deleted), 422 (can never fit that node:
// checked here against the node alone) or 504 (the store was too slow);
// anything else is recorded as wrong.
func rawBinder(ctx context.Context, cs kubernetes.Interface, r *rand.Rand, pods []*v1.Pod, nodes []*v1.Node, created *atomic.Int64, attempts int, tally *binderTally) {
	for range attempts {
		// Without a test to fail, the binder stops at the end of the wait;
		// the test's own checks then find the pods unbound.
		if wait.Poll(ctx, 5*time.Minute, "a pod to bind", func(context.Context) error {
			if created.Load() == 0 {
				return errors.New("none created")
			}
			return nil
		}) != nil {
			return
		}
		n := int(created.Load())
		pod := pods[max(0, n-1-r.Intn(min(n, 40)))]
		node := nodes[r.Intn(len(nodes))]
		err := cs.CoreV1().Pods(namespace).Bind(ctx, &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod.Name},
			Target:     v1.ObjectReference{Kind: "Node", Name: node.Name},
		}, metav1.CreateOptions{})
		tally.record(pod, node, err)
	}
}

func (t *binderTally) record(pod *v1.Pod, node *v1.Node, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err == nil:
		t.bound++
	case apierrors.IsConflict(err):
		t.conflict++
	case apierrors.IsNotFound(err):
		t.notFound++ // deleted, or its create has not returned yet
	case apierrors.IsTimeout(err):
		t.timedOut++
	case apierrors.IsInvalid(err):
		t.invalid++
		if len(placementReasons(pod, node)) == 0 && !exceedsAllocatable(pod, node) {
			t.wrong = append(t.wrong, fmt.Sprintf("422 for %s on %s, which it could fit once room is free: %v", pod.Name, node.Name, err))
		}
	default:
		t.wrong = append(t.wrong, fmt.Sprintf("bind %s to %s: %v", pod.Name, node.Name, err))
	}
}

func exceedsAllocatable(pod *v1.Pod, node *v1.Node) bool {
	want, alloc := podRequests(pod), allocatable(node)
	return want.milliCPU > alloc.milliCPU || want.memory > alloc.memory || alloc.pods < 1
}

// deletePods deletes the named pods at once (grace period 0), bound or not,
// so that bound ones release their share while binders and schedulers run.
func deletePods(ctx context.Context, cs kubernetes.Interface, names []string) error {
	zero := int64(0)
	for _, name := range names {
		err := cs.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", name, err)
		}
	}
	return nil
}
