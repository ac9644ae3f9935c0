package watchcache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/watchcache"
)

func TestListSelectorsNamespacesAndConsistency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	createPod(t, s, pod("a", "web-1", "node-a", map[string]string{"app": "web"}))
	createPod(t, s, pod("a", "db-1", "node-b", map[string]string{"app": "db"}))
	createPod(t, s, pod("b", "web-2", "node-a", map[string]string{"app": "web"}))
	last := createPod(t, s, pod("ab", "web-3", "node-b", map[string]string{"app": "web"}))

	// RV "" is a consistent read: everything just written is there.
	cases := []struct {
		name string
		opts watchcache.ListOptions
		want string
	}{
		{"all", watchcache.ListOptions{}, "[a/db-1 a/web-1 ab/web-3 b/web-2]"},
		{"namespace a (not ab)", watchcache.ListOptions{Namespace: "a"}, "[a/db-1 a/web-1]"},
		{"label", watchcache.ListOptions{Label: labels.SelectorFromSet(labels.Set{"app": "web"})}, "[a/web-1 ab/web-3 b/web-2]"},
		{"node field", watchcache.ListOptions{Field: fields.OneTermEqualSelector("spec.nodeName", "node-a")}, "[a/web-1 b/web-2]"},
		{"ns+label+field", watchcache.ListOptions{Namespace: "ab", Label: labels.SelectorFromSet(labels.Set{"app": "web"}), Field: fields.OneTermEqualSelector("spec.nodeName", "node-b")}, "[ab/web-3]"},
	}
	for _, tc := range cases {
		objs, rv, cont, err := list(ctx, c, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := fmt.Sprint(names(objs)); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
		if rv < last || cont != "" {
			t.Errorf("%s: rv %d (want >= %d), continue %q", tc.name, rv, last, cont)
		}
	}
}

func TestConsistentListSeesRevisionsOfOtherResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	createPod(t, s, pod("a", "p", "n", nil))
	other, err := s.Create(ctx, "/registry/nodes/n", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	// No pod changed, yet a consistent list must reflect the store's current
	// revision; this needs the store's progress notification.
	_, rv, _, err := list(ctx, c, watchcache.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv < other {
		t.Fatalf("consistent list at %d, store was at %d", rv, other)
	}
}

func TestPaginationIsConsistentAcrossWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	for i := 0; i < 7; i++ {
		createPod(t, s, pod("ns", fmt.Sprintf("p%d", i), "n", nil))
	}
	objs, rv, cont, err := list(ctx, c, watchcache.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := names(objs)
	// Writes after the first page must not show in later pages.
	createPod(t, s, pod("ns", "p3a", "n", nil))
	if _, err := s.Delete(ctx, podPrefix+"ns/p5", 0); err != nil {
		t.Fatal(err)
	}
	for cont != "" {
		var pageRV int64
		objs, pageRV, cont, err = list(ctx, c, watchcache.ListOptions{Limit: 3, Continue: cont})
		if err != nil {
			t.Fatal(err)
		}
		if pageRV != rv {
			t.Fatalf("page at %d, first page at %d", pageRV, rv)
		}
		got = append(got, names(objs)...)
	}
	if want := "[ns/p0 ns/p1 ns/p2 ns/p3 ns/p4 ns/p5 ns/p6]"; fmt.Sprint(got) != want {
		t.Fatalf("pages %v, want %s", got, want)
	}
	if _, _, _, err := list(ctx, c, watchcache.ListOptions{Continue: "not-a-token"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("bad continue token: got %v, want 400", err)
	}
}

func TestExactListFromHistoryThenGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, func(cfg *watchcache.Config) { cfg.HistorySize = 4 })
	p := pod("ns", "p", "node-a", nil)
	r1 := createPod(t, s, p)
	p.Spec.NodeName = "node-b"
	r2 := updatePod(t, s, p, r1)
	if _, _, _, err := list(ctx, c, watchcache.ListOptions{}); err != nil { // catch up
		t.Fatal(err)
	}
	objs, rv, _, err := list(ctx, c, watchcache.ListOptions{ResourceVersion: rvs(r1), ResourceVersionMatch: "Exact"})
	if err != nil {
		t.Fatal(err)
	}
	if rv != r1 || len(objs) != 1 || eventDescPod(objs[0]) != "ns/p@"+rvs(r1)+" node=node-a" {
		t.Fatalf("exact list at %d: rv %d, %v", r1, rv, objs)
	}
	// Push r1 out of the 4-event history.
	rev := r2
	for i := 0; i < 5; i++ {
		p.Labels = map[string]string{"i": fmt.Sprint(i)}
		rev = updatePod(t, s, p, rev)
	}
	if _, _, _, err := list(ctx, c, watchcache.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = list(ctx, c, watchcache.ListOptions{ResourceVersion: rvs(r1), ResourceVersionMatch: "Exact"})
	if !isGone(err) {
		t.Fatalf("exact list below history: got %v, want 410", err)
	}
	if _, _, _, err := list(ctx, c, watchcache.ListOptions{ResourceVersion: "0", ResourceVersionMatch: "Exact"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("exact with rv 0: got %v, want 400", err)
	}
	// NotOlderThan an old revision is served from the current state.
	objs, rv, _, err = list(ctx, c, watchcache.ListOptions{ResourceVersion: rvs(r1), ResourceVersionMatch: "NotOlderThan"})
	if err != nil || rv < rev || len(objs) != 1 {
		t.Fatalf("not-older-than list: %v rv %d (want >= %d) %v", err, rv, rev, objs)
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	r := createPod(t, s, pod("ns", "p", "n", nil))
	obj, rv, err := c.Get(ctx, podPrefix+"ns/p", r)
	if err != nil || rv < r || eventDescPod(obj) != "ns/p@"+rvs(r)+" node=n" {
		t.Fatalf("get: %v rv %d %v", err, rv, obj)
	}
	if _, _, err := c.Get(ctx, podPrefix+"ns/missing", 0); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing: got %v, want 404", err)
	}
}

func TestExpiredContinueTokenIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, func(cfg *watchcache.Config) { cfg.HistorySize = 2 })
	var last int64
	for i := 0; i < 4; i++ {
		last = createPod(t, s, pod("ns", fmt.Sprintf("p%d", i), "n", nil))
	}
	_, _, cont, err := list(ctx, c, watchcache.ListOptions{Limit: 2})
	if err != nil || cont == "" {
		t.Fatalf("first page: %q %v", cont, err)
	}
	for i := 0; i < 3; i++ {
		last = updatePod(t, s, pod("ns", "p0", "n", map[string]string{"i": fmt.Sprint(i)}), currentRev(t, s, "ns/p0"))
	}
	if _, rv, _, err := list(ctx, c, watchcache.ListOptions{}); err != nil || rv < last {
		t.Fatalf("catch up: %d %v", rv, err)
	}
	_, _, _, err = list(ctx, c, watchcache.ListOptions{Limit: 2, Continue: cont})
	if !isGone(err) {
		t.Fatalf("continue below history: got %v, want 410", err)
	}
	// As kube-apiserver: the 410 carries a token that resumes after the
	// same key from the latest state, where p4 now exists.
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().ListMeta.Continue == "" {
		t.Fatalf("410 without an inconsistent continue token: %#v", err)
	}
	createPod(t, s, pod("ns", "p4", "n", nil))
	res, err := c.List(ctx, watchcache.ListOptions{Limit: 2, Continue: status.Status().ListMeta.Continue})
	if err != nil {
		t.Fatalf("inconsistent continue: %v", err)
	}
	if got := fmt.Sprint(names(res.Objects)); got != "[ns/p2 ns/p3]" || res.Revision <= last {
		t.Fatalf("inconsistent page %s at %d, want [ns/p2 ns/p3] after %d", got, res.Revision, last)
	}
	if res.RemainingItemCount == nil || *res.RemainingItemCount != 1 {
		t.Fatalf("remainingItemCount %v, want 1 (p4)", res.RemainingItemCount)
	}
}

// kube-apiserver counts the items after a page only for a list without
// selectors; with one, it leaves the count out.
func TestRemainingItemCountOnlyWithoutSelectors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	for i := 0; i < 5; i++ {
		createPod(t, s, pod("ns", fmt.Sprintf("p%d", i), "n", map[string]string{"app": "web"}))
	}
	createPod(t, s, pod("other", "q", "n", nil))
	for _, tc := range []struct {
		opts watchcache.ListOptions
		want string
	}{
		{watchcache.ListOptions{Limit: 2}, "4"},
		{watchcache.ListOptions{Limit: 2, Namespace: "ns"}, "3"},
		{watchcache.ListOptions{Limit: 2, Label: labels.SelectorFromSet(labels.Set{"app": "web"})}, "nil"},
		{watchcache.ListOptions{Limit: 6}, "nil"}, // not cut short
	} {
		res, err := c.List(ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		got := "nil"
		if res.RemainingItemCount != nil {
			got = fmt.Sprint(*res.RemainingItemCount)
		}
		if got != tc.want {
			t.Errorf("%+v: remainingItemCount %s, want %s", tc.opts, got, tc.want)
		}
	}
}

func currentRev(t *testing.T, s store.Interface, key string) int64 {
	t.Helper()
	kv, err := s.Get(context.Background(), podPrefix+key)
	if err != nil {
		t.Fatal(err)
	}
	return kv.ModRevision
}

func TestFutureResourceVersionTimesOutWith504(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newPodCache(t, func(cfg *watchcache.Config) { cfg.FreshnessTimeout = 50 * time.Millisecond })
	_, rv, _, err := list(ctx, c, watchcache.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	future := rvs(rv + 1000)
	_, _, _, err = list(ctx, c, watchcache.ListOptions{ResourceVersion: future})
	if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Fatalf("list at a future revision: got %v, want 504 with cause ResourceVersionTooLarge", err)
	}
	if err := watchErr(t, c, watchcache.WatchOptions{ResourceVersion: future}); !apistorage.IsTooLargeResourceVersion(err) {
		t.Fatalf("watch from a future revision: got %v, want 504 with cause ResourceVersionTooLarge", err)
	}
}

// list is Cache.List with the page's parts apart.
func list(ctx context.Context, c *watchcache.Cache, opts watchcache.ListOptions) ([]runtime.Object, int64, string, error) {
	res, err := c.List(ctx, opts)
	return res.Objects, res.Revision, res.Continue, err
}
