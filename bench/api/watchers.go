package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// nodeWatchers are one pod informer per node, each a list+watch with
// fieldSelector spec.nodeName=NODE over its own connection, as node agents
// run them. They record when each pod's ADDED reaches its node's watcher.
type nodeWatchers struct {
	created                []atomic.Int64 // by pod index: unix ns when its create call started
	added                  []atomic.Int64 // by pod index: unix ns of its first ADDED at its node's watcher
	nDeleted, misdelivered atomic.Int64
	stop                   chan struct{}
}

// noProxy makes each rest.Config it is set on uncacheable by client-go's
// transport cache, so every watcher gets its own connection.
func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

// startNodeWatchers starts one informer per node and waits until all have
// listed.
func startNodeWatchers(ctx context.Context, cfg *rest.Config, nodes, pods int) (*nodeWatchers, error) {
	w := &nodeWatchers{created: make([]atomic.Int64, pods), added: make([]atomic.Int64, pods), stop: make(chan struct{})}
	var synced []cache.InformerSynced
	for i := range nodes {
		c := rest.CopyConfig(cfg)
		c.Proxy = noProxy
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			w.close()
			return nil, err
		}
		node := nodeName(i)
		inf := coreinformers.NewFilteredPodInformer(cs, metav1.NamespaceAll, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
			o.FieldSelector = "spec.nodeName=" + node
		})
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.observeAdded(node, obj) },
			DeleteFunc: func(any) { w.nDeleted.Add(1) },
		}); err != nil {
			w.close()
			return nil, err
		}
		go inf.Run(w.stop)
		synced = append(synced, inf.HasSynced)
	}
	syncCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		w.close()
		return nil, fmt.Errorf("%d node watchers did not list within 5 minutes", nodes)
	}
	return w, nil
}

func (w *nodeWatchers) observeAdded(node string, obj any) {
	now := time.Now().UnixNano()
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != node {
		w.misdelivered.Add(1)
		return
	}
	i, err := strconv.Atoi(strings.TrimPrefix(pod.Name, podPrefix))
	if err != nil || i < 0 || i >= len(w.added) {
		return
	}
	w.added[i].CompareAndSwap(0, now)
}

// latencies returns create-start to ADDED for every pod seen so far.
func (w *nodeWatchers) latencies() []time.Duration {
	var out []time.Duration
	for i := range w.added {
		if a, c := w.added[i].Load(), w.created[i].Load(); a != 0 && c != 0 {
			out = append(out, time.Duration(a-c))
		}
	}
	return out
}

func (w *nodeWatchers) close() { close(w.stop) }

// forget clears every pod's create and ADDED times, so that pods created
// again under the same names are timed afresh.
func (w *nodeWatchers) forget() {
	for i := range w.added {
		w.created[i].Store(0)
		w.added[i].Store(0)
	}
}

// missing counts the pods created successfully whose ADDED has not reached
// their node's watcher.
func (w *nodeWatchers) missing() int {
	n := 0
	for i := range w.added {
		if w.created[i].Load() != 0 && w.added[i].Load() == 0 {
			n++
		}
	}
	return n
}

// waitUntil waits until done holds, the target fails, or timeout passes;
// the caller reports any shortfall.
func waitUntil(ctx context.Context, t *target, timeout time.Duration, done func() bool) {
	_ = waitFor(ctx, timeout, t.procs, func(context.Context) error {
		if done() {
			return nil
		}
		return errors.New("not yet")
	})
}
