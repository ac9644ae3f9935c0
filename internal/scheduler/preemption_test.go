package scheduler

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

func withPriority(p int32) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.Priority = ptr.To(p) } }

// onNode is n's view with pods bound to it.
func onNode(n *v1.Node, pods ...*v1.Pod) nodeView {
	v := view(n, 0, pods...)
	v.pods = map[types.UID]*v1.Pod{}
	for _, p := range pods {
		p.Spec.NodeName = n.Name
		v.pods[p.UID] = p
	}
	return v
}

// The node whose victims matter least wins, and of its lower-priority
// pods only as many as the preemptor needs are evicted, the least
// important first; pods of equal or higher priority, and terminating
// ones, are never victims.
func TestFindPreemptionEvictsTheLeastImportant(t *testing.T) {
	low := testPod("low", "2", "64Mi", withPriority(1))
	lowish := testPod("lowish", "1500m", "64Mi", withPriority(5))
	system := testPod("system", "400m", "64Mi", withPriority(1000))
	mid := testPod("mid", "3900m", "64Mi", withPriority(50))
	leaving := testPod("leaving", "3", "64Mi", withPriority(0), func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{} })
	nodes := nodeViews{
		onNode(testNode("a", "4", "8Gi"), low, lowish, system),
		onNode(testNode("b", "4", "8Gi"), mid),
		onNode(testNode("c", "4", "8Gi"), leaving),
	}
	preemptor := testPod("preemptor", "2", "64Mi", withPriority(60))
	got, ok := findPreemption(preemptor, nodes, podChecks{})
	if !ok || got.node != "a" || len(got.victims) != 1 || got.victims[0].Name != "low" {
		t.Fatalf("preemption %+v (found %v), want node a with victim low alone", got, ok)
	}
	if _, ok := findPreemption(testPod("meek", "2", "64Mi", withPriority(0)), nodes, podChecks{}); ok {
		t.Errorf("a pod of the lowest priority found victims")
	}
	never := testPod("never", "2", "64Mi", withPriority(60), func(p *v1.Pod) { p.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever) })
	if mayPreempt(never, nodes) {
		t.Errorf("a pod with preemptionPolicy Never may preempt")
	}
	nominated := testPod("nominated", "2", "64Mi", withPriority(60), func(p *v1.Pod) { p.Status.NominatedNodeName = "c" })
	if mayPreempt(nominated, nodes) {
		t.Errorf("a pod may preempt again while its victims on its nominated node terminate")
	}
}

// A pending pod of higher priority that fits nowhere has a lower-priority
// pod marked a disruption target and deleted, is nominated to its node,
// and is bound there once the victim is gone.
func TestPreemptionEvictsAndBinds(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", bindingReactor(client))
	low := testPod("low", "3", "64Mi", withPriority(0), func(p *v1.Pod) { p.Spec.NodeName = "a" })
	high := testPod("high", "2", "64Mi", withPriority(100))
	create(t, client, zonedNode("a", ""), low, high)
	runScheduler(t, client)

	ctx := context.Background()
	err := wait.PollTrue(ctx, convergeLimit, "the high-priority pod bound to a", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "high", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "a", err
	})
	if err != nil {
		t.Fatal(err)
	}
	var marked, deleted, nominated bool
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.PatchAction:
			marked = marked || a.GetName() == "low" && a.GetSubresource() == "status" && strings.Contains(string(a.GetPatch()), v1.PodReasonPreemptionByScheduler)
			nominated = nominated || a.GetName() == "high" && a.GetSubresource() == "status" && strings.Contains(string(a.GetPatch()), `"nominatedNodeName":"a"`)
		case k8stesting.DeleteAction:
			deleted = deleted || a.GetName() == "low"
		}
	}
	if !marked || !deleted || !nominated {
		t.Errorf("victim marked a disruption target %v, deleted %v; preemptor nominated %v; want all three", marked, deleted, nominated)
	}
}
