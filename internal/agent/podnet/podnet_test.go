package podnet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime records UpdateRuntimeConfig calls; failFirst makes the first
// one fail, as a runtime still starting would.
type fakeRuntime struct {
	runtimeapi.RuntimeServiceClient
	mu        sync.Mutex
	failFirst bool
	calls     []string
}

func (f *fakeRuntime) UpdateRuntimeConfig(_ context.Context, req *runtimeapi.UpdateRuntimeConfigRequest, _ ...grpc.CallOption) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr())
	if f.failFirst && len(f.calls) == 1 {
		return nil, errors.New("runtime not ready")
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

func (f *fakeRuntime) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// fakeRoutes is a routing table holding only berth's routes.
type fakeRoutes struct {
	mu     sync.Mutex
	routes map[Route]bool
}

func (f *fakeRoutes) List(context.Context) ([]Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Route
	for r := range f.routes {
		out = append(out, r)
	}
	return out, nil
}

func (f *fakeRoutes) Replace(_ context.Context, r Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for old := range f.routes {
		if old.Dst == r.Dst {
			delete(f.routes, old)
		}
	}
	f.routes[r] = true
	return nil
}

func (f *fakeRoutes) Delete(_ context.Context, r Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.routes, r)
	return nil
}

func (f *fakeRoutes) String() string {
	rs, _ := f.List(context.Background())
	var s []string
	for _, r := range rs {
		s = append(s, r.Dst.String()+" via "+r.Via.String())
	}
	sort.Strings(s)
	return fmt.Sprint(s)
}

func testNode(name, podCIDR string, ips ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if podCIDR != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR, []string{podCIDR}
	}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	return n
}

// holds turns cond into a wait condition whose failure shows state.
func holds(cond func() bool, state func() string) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errors.New("state " + state())
	}
}

func TestPodCIDRReachesRuntimeAndRoutesFollowNodes(t *testing.T) {
	client := fake.NewClientset(
		testNode("a", "10.88.0.0/24", "10.250.0.11"),
		testNode("b", "10.88.1.0/24", "10.250.0.12"),
		testNode("c", "", "10.250.0.13"),         // no podCIDR yet
		testNode("d", "10.88.3.0/24"),            // no address yet
		testNode("e", "10.88.4.0/24", "fd00::5"), // no address of the CIDR's family
	)
	rt := &fakeRuntime{failFirst: true}
	stale := Route{Dst: netip.MustParsePrefix("10.88.9.0/24"), Via: netip.MustParseAddr("10.250.0.19")}
	routes := &fakeRoutes{routes: map[Route]bool{stale: true}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(Config{Client: client, NodeName: "a", Runtime: rt, Routes: routes}).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	toB := Route{Dst: netip.MustParsePrefix("10.88.1.0/24"), Via: netip.MustParseAddr("10.250.0.12")}
	only := func(want ...Route) func() bool {
		return func() bool {
			have, _ := routes.List(ctx)
			return len(have) == len(want) && !slices.ContainsFunc(want, func(r Route) bool { return !slices.Contains(have, r) })
		}
	}
	wait.UntilNil(t, 30*time.Second, "route to b only, stale route gone", holds(only(toB), routes.String))
	wait.UntilNil(t, 30*time.Second, "pod CIDR retried after a failed call", holds(func() bool {
		c := rt.seen()
		return len(c) == 2 && c[0] == "10.88.0.0/24" && c[1] == "10.88.0.0/24"
	}, func() string { return fmt.Sprint(rt.seen()) }))

	c := testNode("c", "10.88.2.0/24", "10.250.0.13")
	if _, err := client.CoreV1().Nodes().Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	toC := Route{Dst: netip.MustParsePrefix("10.88.2.0/24"), Via: netip.MustParseAddr("10.250.0.13")}
	wait.UntilNil(t, 30*time.Second, "route to c once it has a podCIDR", holds(only(toB, toC), routes.String))

	if err := client.CoreV1().Nodes().Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilNil(t, 30*time.Second, "route to deleted b removed", holds(only(toC), routes.String))
	if c := rt.seen(); len(c) != 2 {
		t.Fatalf("pod CIDR sent again without a change: %v", c)
	}
}

func TestDesiredRoutes(t *testing.T) {
	self := view(testNode("a", "10.88.0.0/24", "10.250.0.11", "fd00::11"))
	nodes := []*v1.Node{
		testNode("a", "10.88.0.0/24", "10.250.0.11", "fd00::11"),
		testNode("v6", "fd00:88:1::/64", "10.250.0.12", "fd00::12"),
		testNode("overlap", "10.88.0.0/23", "10.250.0.13"),
		testNode("same-host", "10.88.4.0/24", "10.250.0.11"),
		testNode("dual", "", "10.250.0.15", "fd00::15"),
	}
	nodes[4].Spec.PodCIDRs = []string{"10.88.5.0/24", "fd00:88:5::/64"}
	got := desiredRoutes(&self, nodes)
	want := []Route{
		{netip.MustParsePrefix("fd00:88:1::/64"), netip.MustParseAddr("fd00::12")},
		{netip.MustParsePrefix("10.88.5.0/24"), netip.MustParseAddr("10.250.0.15")},
		{netip.MustParsePrefix("fd00:88:5::/64"), netip.MustParseAddr("fd00::15")},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("desiredRoutes = %v\nwant %v", got, want)
	}
}
