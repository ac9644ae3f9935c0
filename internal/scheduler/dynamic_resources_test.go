package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// A pod that claims dynamic resources is never bound, since berth
// allocates none, and says so; a plain pod beside it is bound.
func TestPodWithResourceClaimsIsNotScheduled(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", bindingReactor(client))
	claiming := labelled("gpu", "default", nil, func(p *v1.Pod) {
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}}
	})
	create(t, client, zonedNode("a", ""), claiming, labelled("plain", "default", nil))
	runScheduler(t, client)

	ctx := context.Background()
	get := func(name string) *v1.Pod {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	err := wait.PollTrue(ctx, convergeLimit, "the plain pod bound and the claiming one reported unschedulable", func(context.Context) (bool, error) {
		c := podCondition(get("gpu"), v1.PodScheduled)
		return get("plain").Spec.NodeName == "a" && c != nil && c.Reason == v1.PodReasonUnschedulable, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := get("gpu"); got.Spec.NodeName != "" || podCondition(got, v1.PodScheduled).Message != errDynamicResources.Error() {
		t.Errorf("claiming pod on %q with condition %+v, want unbound, saying berth allocates no dynamic resources", got.Spec.NodeName, podCondition(got, v1.PodScheduled))
	}
}
