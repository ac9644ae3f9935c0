package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

const (
	podLabel = "bench=podstartup"
	// creators send the create requests in parallel, so the N pods arrive
	// as one burst rather than paced by one connection's round trips.
	creators = 8
	// waitLimit bounds a hung run (a pod that never starts); it is not a figure.
	waitLimit = 15 * time.Minute
)

// measurement is what one runtime measured in one round.
type measurement struct {
	started, ready []time.Duration // per pod, from creation
	reportDelay    []time.Duration // per pod, containers' startedAt to the watch event showing them running
	span           time.Duration   // first creation to last start
	deleteAll      time.Duration   // delete request to the last pod object gone
	restarts       int
	cpu            cpuSample // CPU used from the first creation until all pods started
}

// measurePods creates n pods (at once, or paced at rate pods per second when
// rate > 0), watches them until all have started and are Ready (then calls
// allStarted), then deletes them and waits until they are gone.
func measurePods(ctx context.Context, client kubernetes.Interface, n int, rate float64, allStarted func()) (measurement, error) {
	pods := client.CoreV1().Pods(metav1.NamespaceDefault)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: podLabel})
	if err != nil {
		return measurement{}, err
	}
	if len(list.Items) != 0 {
		return measurement{}, fmt.Errorf("%d pods of an earlier run still exist", len(list.Items))
	}
	tr := newTracker(n)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watched, err := watchPods(watchCtx, pods, list.ResourceVersion, tr)
	if err != nil {
		return measurement{}, err
	}
	create := createPods
	if rate > 0 {
		create = pacedCreator(rate)
	}
	if err := create(ctx, pods, n, tr); err != nil {
		return measurement{}, err
	}
	select {
	case <-tr.done:
	case err := <-watched:
		return measurement{}, fmt.Errorf("pod watch ended: %w", err)
	case <-time.After(waitLimit):
		return measurement{}, fmt.Errorf("not all %d pods started and Ready within %s", n, waitLimit)
	case <-ctx.Done():
		return measurement{}, ctx.Err()
	}
	allStarted()
	var m measurement
	m.started, m.ready, m.reportDelay, m.span = tr.latencies()
	m.restarts = tr.restarts()
	m.deleteAll, err = deleteAll(ctx, pods)
	return m, err
}

// watchPods feeds every event of the bench's pods into tr with the moment it
// arrived; the returned channel yields why the watch ended.
func watchPods(ctx context.Context, pods typedcorev1.PodInterface, resourceVersion string, tr *tracker) (<-chan error, error) {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = podLabel
		return pods.Watch(ctx, o)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, lw)
	if err != nil {
		return nil, err
	}
	ended := make(chan error, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			at := time.Now()
			if ev.Type == watch.Error {
				ended <- fmt.Errorf("watch error: %v", ev.Object)
				return
			}
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				tr.observe(pod, at)
			}
		}
		ended <- errors.New("result channel closed")
	}()
	return ended, nil
}

// createPods sends n create requests from several clients at once,
// recording each one's start time in tr.
func createPods(ctx context.Context, pods typedcorev1.PodInterface, n int, tr *tracker) error {
	names := make(chan string, n)
	for i := range n {
		names <- podName(i)
	}
	close(names)
	var wg sync.WaitGroup
	errs := make([]error, creators)
	for w := range creators {
		wg.Go(func() {
			for name := range names {
				if errs[w] = createPod(ctx, pods, name, tr); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pacedCreator sends one create request every 1/rate seconds, each on its
// own goroutine so that a slow answer does not delay the next: pods arrive
// at a steady rate, as clusterloader2 creates the pods whose startup
// latency the Kubernetes SLO is measured on.
func pacedCreator(rate float64) func(context.Context, typedcorev1.PodInterface, int, *tracker) error {
	interval := time.Duration(float64(time.Second) / rate)
	return func(ctx context.Context, pods typedcorev1.PodInterface, n int, tr *tracker) error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for i := range n {
			if i > 0 {
				select {
				case <-ticker.C:
				case <-ctx.Done():
					wg.Wait()
					return ctx.Err()
				}
			}
			wg.Go(func() { errs[i] = createPod(ctx, pods, podName(i), tr) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

func podName(i int) string { return fmt.Sprintf("startup-%03d", i) }

// createPod records the request's start in tr and sends it.
func createPod(ctx context.Context, pods typedcorev1.PodInterface, name string, tr *tracker) error {
	tr.created(name, time.Now())
	if _, err := pods.Create(ctx, benchPod(name), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}

// benchPod: one busybox container that sleeps and exits at once on SIGTERM,
// its image already present on the node (IfNotPresent: no pull, no registry
// round trip).
func benchPod(name string) *corev1.Pod {
	grace := int64(10)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "podstartup"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "sleep", Image: podImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
			}},
		},
	}
}

// deleteAll deletes the bench's pods (gracefully: the agent stops their
// containers, removes their sandboxes and then the objects) and waits until
// none is left.
func deleteAll(ctx context.Context, pods typedcorev1.PodInterface) (time.Duration, error) {
	begin := time.Now()
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: podLabel}); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(waitLimit)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: podLabel})
		if err == nil && len(list.Items) == 0 {
			return time.Since(begin), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("deleted pods not gone within %s (last error %v)", waitLimit, err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
