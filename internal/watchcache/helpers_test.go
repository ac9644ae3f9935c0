package watchcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/watchcache"
)

const podPrefix = "/registry/pods/"

func decodePod(kv store.KV) (runtime.Object, error) {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(kv.Value, pod); err != nil {
		return nil, err
	}
	pod.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return pod, nil
}

func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, errors.New("not a pod")
	}
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
		"spec.nodeName":      pod.Spec.NodeName,
	}, nil
}

func podConfig(s store.Interface) watchcache.Config {
	return watchcache.Config{
		Store:       s,
		Resource:    schema.GroupResource{Resource: "pods"},
		Prefix:      podPrefix,
		Decode:      decodePod,
		Attrs:       podAttrs,
		IndexFields: []string{"spec.nodeName"},
		NewObject:   func() runtime.Object { return &corev1.Pod{} },
	}
}

// startCache runs a cache over s until the test ends and waits until it is ready.
func startCache(t *testing.T, cfg watchcache.Config) *watchcache.Cache {
	t.Helper()
	c := watchcache.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Run(ctx); err != nil {
			t.Errorf("cache run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func newPodCache(t *testing.T, mutate func(*watchcache.Config)) (*watchcache.Cache, store.Interface) {
	t.Helper()
	s := etcdtest.New(t)
	cfg := podConfig(s)
	if mutate != nil {
		mutate(&cfg)
	}
	return startCache(t, cfg), s
}

func pod(ns, name, node string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

func podKey(p *corev1.Pod) string { return podPrefix + p.Namespace + "/" + p.Name }

func createPod(t *testing.T, s store.Interface, p *corev1.Pod) int64 {
	t.Helper()
	b, _ := json.Marshal(p)
	rev, err := s.Create(context.Background(), podKey(p), b)
	if err != nil {
		t.Fatalf("create %s: %v", podKey(p), err)
	}
	return rev
}

func updatePod(t *testing.T, s store.Interface, p *corev1.Pod, expected int64) int64 {
	t.Helper()
	b, _ := json.Marshal(p)
	rev, err := s.Update(context.Background(), podKey(p), expected, b)
	if err != nil {
		t.Fatalf("update %s: %v", podKey(p), err)
	}
	return rev
}

func names(objs []runtime.Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		p := o.(*corev1.Pod)
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

// eventDesc is a compact, comparable form of a watch event.
func eventDesc(ev watch.Event) string {
	acc, err := metaOf(ev.Object)
	if err != nil {
		return string(ev.Type) + " ?"
	}
	if ev.Type == watch.Bookmark {
		return "BOOKMARK@" + acc.GetResourceVersion()
	}
	p := ev.Object.(*corev1.Pod)
	return string(ev.Type) + " " + p.Namespace + "/" + p.Name + "@" + p.ResourceVersion + " node=" + p.Spec.NodeName
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, errors.New("no metadata")
	}
	return o, nil
}

// nextEvents reads n events, failing if the channel closes first or the
// test's own deadline (not a timing assertion: it only stops a hung test) passes.
func nextEvents(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v, wanted %d events", out, n)
			}
			out = append(out, eventDesc(ev))
		case <-deadline:
			t.Fatalf("watch hung after %v, wanted %d events", out, n)
		}
	}
	return out
}

// drainUntilClosed reads until the channel closes, returning what it read.
func drainUntilClosed(t *testing.T, w watch.Interface) []string {
	t.Helper()
	var out []string
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			out = append(out, eventDesc(ev))
		case <-deadline:
			t.Fatalf("watch never closed; read %v", out)
		}
	}
}

// watchErr starts a watch that must fail in its stream, as kube-apiserver's
// cacher fails a valid watch: it returns the error its one ERROR event
// carries, then checks that the stream closes.
func watchErr(t *testing.T, c *watchcache.Cache, opts watchcache.WatchOptions) error {
	t.Helper()
	w, err := c.Watch(context.Background(), opts)
	if err != nil {
		t.Fatalf("watch from %q answered %v; want the failure as an ERROR event", opts.ResourceVersion, err)
	}
	defer w.Stop()
	var ev watch.Event
	select {
	case ev = <-w.ResultChan():
	case <-time.After(30 * time.Second):
		t.Fatalf("watch from %q sent no event", opts.ResourceVersion)
	}
	if ev.Type != watch.Error {
		t.Fatalf("watch from %q: first event %s; want ERROR", opts.ResourceVersion, eventDesc(ev))
	}
	if rest := drainUntilClosed(t, w); len(rest) != 0 {
		t.Fatalf("watch from %q went on after its ERROR: %v", opts.ResourceVersion, rest)
	}
	return apierrors.FromObject(ev.Object)
}

func rvs(rv int64) string { return strconv.FormatInt(rv, 10) }

func isGone(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

func eventDescPod(obj runtime.Object) string {
	p := obj.(*corev1.Pod)
	return p.Namespace + "/" + p.Name + "@" + p.ResourceVersion + " node=" + p.Spec.NodeName
}
