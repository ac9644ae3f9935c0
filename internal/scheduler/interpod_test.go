package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
)

const hostnameKey = "kubernetes.io/hostname"
const zoneKey = "topology.kubernetes.io/zone"

// zonedNode is a node labelled with its hostname and, unless zone is "", a zone.
func zonedNode(name, zone string) *v1.Node {
	return testNode(name, "4", "8Gi", func(n *v1.Node) {
		n.Labels = map[string]string{hostnameKey: name}
		if zone != "" {
			n.Labels[zoneKey] = zone
		}
	})
}

// labelled is a pod with exactly these labels, in namespace ns.
func labelled(name, ns string, podLabels map[string]string, mutate ...func(*v1.Pod)) *v1.Pod {
	return testPod(name, "100m", "64Mi", append([]func(*v1.Pod){func(p *v1.Pod) {
		p.Namespace, p.Labels = ns, podLabels
	}}, mutate...)...)
}

func term(key string, sel map[string]string, mutate ...func(*v1.PodAffinityTerm)) v1.PodAffinityTerm {
	t := v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
	for _, m := range mutate {
		m(&t)
	}
	return t
}

func requiring(terms ...v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

func refusing(terms ...v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

func on(node string, p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = node
	return p
}

// decide runs one scheduling cycle for pod against a cache of nodes and placed pods.
func decide(t *testing.T, pod *v1.Pod, nodes []*v1.Node, placed []*v1.Pod, nsLabels namespaceLabels) decision {
	t.Helper()
	c := newCache()
	for _, n := range nodes {
		c.setNode(n)
	}
	for _, p := range placed {
		c.observePod(p)
	}
	var d decision
	c.withNodes(spreadGroup(pod), func(l nodeList, pp placedPods) {
		checks, err := preparePodChecks(pod, l, pp, nsLabels)
		if err != nil {
			t.Fatal(err)
		}
		d = schedule(pod, l, checks, 0)
	})
	return d
}

func TestInterPodAffinityFilters(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	hosts := []*v1.Node{zonedNode("a", "z1"), zonedNode("b", "z1"), zonedNode("c", "z2")}
	nsLabels := func(name string) labels.Set {
		return map[string]labels.Set{"prod": {"env": "prod"}, "default": {}}[name]
	}
	runPlacementCases(t, nsLabels, []placementCase{
		{name: "anti-affinity on hostname avoids the node with a matching pod",
			pod:    labelled("p", "default", web, refusing(term(hostnameKey, web))),
			nodes:  hosts[:2],
			placed: []*v1.Pod{on("a", labelled("w1", "default", web))},
			want:   "b"},
		{name: "anti-affinity on hostname with a matching pod everywhere",
			pod:     labelled("p", "default", web, refusing(term(hostnameKey, web))),
			nodes:   hosts[:2],
			placed:  []*v1.Pod{on("a", labelled("w1", "default", web)), on("b", labelled("w2", "default", web))},
			message: "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."},
		{name: "anti-affinity on zone rules out the whole zone",
			pod:    labelled("p", "default", web, refusing(term(zoneKey, web))),
			nodes:  hosts,
			placed: []*v1.Pod{on("a", labelled("w1", "default", web))},
			want:   "c"},
		{name: "anti-affinity counts only the term's namespaces (the pod's own by default)",
			pod:    labelled("p", "default", web, refusing(term(hostnameKey, web))),
			nodes:  hosts[:1],
			placed: []*v1.Pod{on("a", labelled("w1", "prod", web))},
			want:   "a"},
		{name: "an empty namespace selector means every namespace",
			pod: labelled("p", "default", web, refusing(term(hostnameKey, web, func(t *v1.PodAffinityTerm) {
				t.NamespaceSelector = &metav1.LabelSelector{}
			}))),
			nodes:   hosts[:1],
			placed:  []*v1.Pod{on("a", labelled("w1", "prod", web))},
			message: "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."},
		{name: "a namespace selector matches namespaces by label",
			pod: labelled("p", "default", web, refusing(term(hostnameKey, web, func(t *v1.PodAffinityTerm) {
				t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
			}))),
			nodes:  hosts[:2],
			placed: []*v1.Pod{on("a", labelled("w1", "prod", web)), on("b", labelled("w2", "default", web))},
			want:   "b"},
		{name: "matchLabelKeys narrows the selector to the pod's own value",
			pod: labelled("p", "default", map[string]string{"app": "web", "version": "v2"}, refusing(term(hostnameKey, web, func(t *v1.PodAffinityTerm) {
				t.MatchLabelKeys = []string{"version"}
			}))),
			nodes:  hosts[:2],
			placed: []*v1.Pod{on("a", labelled("w1", "default", map[string]string{"app": "web", "version": "v1"})), on("b", labelled("w2", "default", map[string]string{"app": "web", "version": "v2"}))},
			want:   "a"},
		{name: "a nil label selector selects no pod",
			pod: labelled("p", "default", web, refusing(term(hostnameKey, nil, func(t *v1.PodAffinityTerm) {
				t.LabelSelector = nil
			}))),
			nodes:  hosts[:1],
			placed: []*v1.Pod{on("a", labelled("w1", "default", web))},
			want:   "a"},
		{name: "a placed pod's anti-affinity keeps the pods it selects away",
			pod:     labelled("p", "default", web),
			nodes:   hosts[:1],
			placed:  []*v1.Pod{on("a", labelled("d1", "default", db, refusing(term(hostnameKey, web))))},
			message: "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."},
		{name: "a placed pod's anti-affinity on zone keeps them out of its zone",
			pod:    labelled("p", "default", web),
			nodes:  hosts,
			placed: []*v1.Pod{on("b", labelled("d1", "default", db, refusing(term(zoneKey, web))))},
			want:   "c"},
		{name: "affinity to a zone places the pod in the zone of a matching pod",
			pod:    labelled("p", "default", web, requiring(term(zoneKey, db))),
			nodes:  hosts,
			placed: []*v1.Pod{on("c", labelled("d1", "default", db))},
			want:   "c"},
		{name: "affinity with no matching pod anywhere",
			pod:     labelled("p", "default", web, requiring(term(zoneKey, db))),
			nodes:   hosts,
			message: "0/3 nodes are available: 3 node(s) didn't match pod affinity rules."},
		{name: "the first pod of a group that requires its own kind lands where the topology exists",
			pod:    labelled("p", "default", web, requiring(term(zoneKey, web))),
			nodes:  []*v1.Node{zonedNode("a", ""), zonedNode("b", "z1")},
			placed: []*v1.Pod{on("a", labelled("other", "default", db))},
			want:   "b"},
		{name: "once one of the group is placed, the next must join its zone",
			pod:    labelled("p", "default", web, requiring(term(zoneKey, web))),
			nodes:  hosts,
			placed: []*v1.Pod{on("a", labelled("w1", "default", web)), on("c", labelled("d1", "default", db))},
			want:   "b"},
		{name: "affinity and anti-affinity together: with the db, apart from other webs",
			pod:    labelled("p", "default", web, requiring(term(zoneKey, db)), refusing(term(hostnameKey, web))),
			nodes:  hosts,
			placed: []*v1.Pod{on("a", labelled("d1", "default", db)), on("b", labelled("w1", "default", web))},
			want:   "a"},
		{name: "inter-pod affinity is judged only where resources fit",
			pod:   labelled("p", "default", web, refusing(term(hostnameKey, web)), func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("3") }),
			nodes: hosts[:2],
			placed: []*v1.Pod{on("a", labelled("w1", "default", web)),
				on("b", testPod("big", "2", "64Mi", func(p *v1.Pod) { p.Labels = db }))},
			message: "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod anti-affinity rules."},
	})
}

// placementCase is one scheduling cycle to check: pod among nodes where
// placed pods run.
type placementCase struct {
	name   string
	pod    *v1.Pod
	nodes  []*v1.Node
	placed []*v1.Pod
	// want is the chosen node, or when "" the unschedulable message.
	want, message string
}

func runPlacementCases(t *testing.T, nsLabels namespaceLabels, cases []placementCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(t, tc.pod, tc.nodes, tc.placed, nsLabels)
			if d.node != tc.want {
				t.Fatalf("scheduled to %q (%s), want %q", d.node, d.message(), tc.want)
			}
			if tc.want == "" && d.message() != tc.message {
				t.Errorf("message\n%q\nwant\n%q", d.message(), tc.message)
			}
		})
	}
}

func TestNoInterPodCheckWithoutTerms(t *testing.T) {
	c := newCache()
	c.setNode(zonedNode("a", "z1"))
	c.observePod(on("a", labelled("w1", "default", map[string]string{"app": "web"})))
	c.withNodes("", func(_ nodeList, pp placedPods) {
		check, err := newInterPodCheck(labelled("p", "default", nil), pp.all, pp.withAffinityTerms, nil)
		if err != nil || check != nil {
			t.Errorf("a pod no term concerns got check %+v, err %v", check, err)
		}
	})
}

func TestCacheTracksPlacedPodsWithAntiAffinity(t *testing.T) {
	c := newCache()
	c.setNode(zonedNode("a", "z1"))
	d := on("a", labelled("d1", "default", map[string]string{"app": "db"}, refusing(term(hostnameKey, map[string]string{"app": "web"}))))
	c.observePod(d)
	count := func() (n int) {
		c.withNodes("", func(_ nodeList, pp placedPods) {
			for range pp.withAffinityTerms {
				n++
			}
		})
		return n
	}
	if got := count(); got != 1 {
		t.Fatalf("tracked %d pods with anti-affinity, want 1", got)
	}
	done := d.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	c.observePod(done)
	if got := count(); got != 0 {
		t.Fatalf("a finished pod still refuses others: %d tracked", got)
	}
}

// A pod that requires a pod not yet placed waits, and is bound once that
// pod is: the placement is the cluster change it waits for.
func TestPodWaitingForAffinityIsBoundOncePartnerIsPlaced(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", bindingReactor(client))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range []*v1.Node{zonedNode("a", "z1"), zonedNode("c", "z2")} {
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	follower := labelled("follower", "default", map[string]string{"app": "web"}, requiring(term(zoneKey, map[string]string{"app": "db"})))
	if _, err := client.CoreV1().Pods("default").Create(ctx, follower, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Client: client})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	get := func(name string) *v1.Pod {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	err := wait.PollTrue(ctx, 30*time.Second, "the follower to be reported unschedulable", func(context.Context) (bool, error) {
		c := podCondition(get("follower"), v1.PodScheduled)
		return c != nil && c.Reason == v1.PodReasonUnschedulable, nil
	})
	if err != nil {
		t.Fatalf("follower never reported unschedulable: %v", err)
	}
	if want := "0/2 nodes are available: 2 node(s) didn't match pod affinity rules."; podCondition(get("follower"), v1.PodScheduled).Message != want {
		t.Errorf("message %q, want %q", podCondition(get("follower"), v1.PodScheduled).Message, want)
	}
	// The partner arrives already bound (as a pod created with spec.nodeName).
	if _, err := client.CoreV1().Pods("default").Create(ctx, on("c", labelled("db", "default", map[string]string{"app": "db"})), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollTrue(ctx, 30*time.Second, "the follower to be bound after its partner was placed", func(context.Context) (bool, error) {
		return get("follower").Spec.NodeName != "", nil
	})
	if err != nil {
		t.Fatalf("follower not bound after its partner was placed: %v", err)
	}
	if got := get("follower").Spec.NodeName; got != "c" {
		t.Errorf("follower bound to %s, want c (the partner's zone)", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func preferring(affinity, anti []v1.WeightedPodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		if affinity != nil {
			p.Spec.Affinity.PodAffinity = &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: affinity}
		}
		if anti != nil {
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: anti}
		}
	}
}

func weighted(weight int32, t v1.PodAffinityTerm) []v1.WeightedPodAffinityTerm {
	return []v1.WeightedPodAffinityTerm{{Weight: weight, PodAffinityTerm: t}}
}

// Preferences outweigh the resource scores only as far as kube-scheduler's
// default weights let them; they never filter.
func TestInterPodPreferencesScore(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	cache := map[string]string{"app": "cache"}
	hosts := []*v1.Node{zonedNode("a", "z1"), zonedNode("b", "z1"), zonedNode("c", "z2")}
	cases := []placementCase{
		{name: "preferred affinity draws the pod to the zone of the pods it prefers",
			pod:    labelled("p", "default", web, preferring(weighted(100, term(zoneKey, db)), nil)),
			placed: []*v1.Pod{on("c", labelled("d1", "default", db))},
			want:   "c"},
		{name: "preferred anti-affinity pushes the pod out of a zone, never filters it",
			pod:    labelled("p", "default", web, preferring(nil, weighted(100, term(zoneKey, web)))),
			placed: []*v1.Pod{on("c", labelled("w1", "default", web))},
			want:   "a"},
		{name: "a placed pod's preference for the pod draws it there",
			pod:    labelled("p", "default", web),
			placed: []*v1.Pod{on("c", labelled("c1", "default", cache, preferring(weighted(100, term(zoneKey, web)), nil)))},
			want:   "c"},
		{name: "a placed pod's required affinity for the pod counts as a preference",
			pod:    labelled("p", "default", web),
			placed: []*v1.Pod{on("b", labelled("c1", "default", cache, requiring(term(hostnameKey, web))))},
			want:   "b"},
		{name: "a placed pod's preferred anti-affinity keeps the pod away",
			pod: labelled("p", "default", web),
			placed: []*v1.Pod{on("a", labelled("c1", "default", cache, preferring(nil, weighted(100, term(zoneKey, web))))),
				on("c", labelled("c2", "default", cache))},
			want: "c"}, // c1 refuses z1 (a and b), though c is the busier node
	}
	for i := range cases {
		cases[i].nodes = hosts
	}
	runPlacementCases(t, nil, cases)
}

// A term whose selector does not parse concerns its own pod only: placed,
// it is not honoured (and blocks no one); being scheduled, its pod fits
// nowhere, with the parse error as the reason.
func TestUnparsableTermsBlockOnlyTheirOwnPod(t *testing.T) {
	bogus := term(hostnameKey, nil, func(t *v1.PodAffinityTerm) {
		t.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	})
	c := newCache()
	c.setNode(zonedNode("a", "z1"))
	c.observePod(on("a", labelled("broken", "default", nil, refusing(bogus))))
	c.withNodes("", func(l nodeList, pp placedPods) {
		if _, err := preparePodChecks(labelled("p", "default", nil), l, pp, nil); err != nil {
			t.Errorf("a placed pod's bad term stopped another pod: %v", err)
		}
		if _, err := preparePodChecks(labelled("q", "default", nil, refusing(bogus)), l, pp, nil); err == nil {
			t.Error("a pod with a bad term of its own was judged")
		}
	})
}
