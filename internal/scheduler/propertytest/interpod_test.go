package propertytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/scheduler"
	"github.com/berth/berth/internal/testkit/apitest"
	"github.com/berth/berth/internal/testkit/wait"
)

// Through a real API server: four replicas that refuse to share a host, on
// three hosts. Three land on three different nodes, the fourth stays
// Pending with kube-scheduler's message; a pod that requires a replica's
// company lands beside one.
func TestAntiAffinityOnHostnameSpreadsReplicasAcrossNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(apitest.Start(t))
	for _, n := range testNodes(1)[:3] {
		n.Labels["kubernetes.io/hostname"] = n.Name
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		if err := scheduler.New(scheduler.Config{Client: cs, Logger: apitest.Logger(t)}).Run(ctx); err != nil {
			t.Errorf("scheduler: %v", err)
		}
	}()

	replica := map[string]string{"app": "replica"}
	hostTerm := func(sel map[string]string) []v1.PodAffinityTerm {
		return []v1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}}
	}
	pod := func(name string, podLabels map[string]string, affinity *v1.Affinity) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: podLabels},
			Spec: v1.PodSpec{Affinity: affinity, Containers: []v1.Container{{Name: "c", Image: "busybox",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}},
		}
	}
	for i := range 4 {
		p := pod(fmt.Sprintf("replica-%d", i), replica, &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: hostTerm(replica)}})
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	companion := pod("companion", map[string]string{"app": "companion"}, &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: hostTerm(replica)}})
	if _, err := cs.CoreV1().Pods("default").Create(ctx, companion, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const want = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
	var list *v1.PodList
	err := wait.PollTrue(ctx, 2*time.Minute, "the pods to be bound or waiting", func(ctx context.Context) (bool, error) {
		var err error
		if list, err = cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
			return false, nil
		}
		bound, waiting := 0, 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable && c.Message == want {
					waiting++
				}
			}
		}
		return bound == 4 && waiting == 1, nil
	})
	if err != nil {
		t.Fatalf("want 3 replicas and the companion bound, one replica unschedulable with %q: %v\n%v", want, err, placements(list))
	}
	replicaNodes := map[string]bool{}
	companionNode := ""
	for _, p := range list.Items {
		switch {
		case p.Name == "companion":
			companionNode = p.Spec.NodeName
		case p.Spec.NodeName != "":
			if replicaNodes[p.Spec.NodeName] {
				t.Errorf("two replicas share %s: %v", p.Spec.NodeName, placements(list))
			}
			replicaNodes[p.Spec.NodeName] = true
		}
	}
	if !replicaNodes[companionNode] {
		t.Errorf("companion on %q, where no replica runs: %v", companionNode, placements(list))
	}
}

func placements(list *v1.PodList) map[string]string {
	out := map[string]string{}
	if list != nil {
		for _, p := range list.Items {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}
