package noderestriction

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
)

// podStatusCase is one pods/status update by node-a: the stored pod, the
// pod it sends, and the refusal it must get ("" allows).
type podStatusCase struct {
	name     string
	old, new *corev1.Pod
	want     string
}

// podStatusCases are the pods/status updates both berth's plugin and
// upstream's answer alike (TestPodStatusMatchesUpstream).
func podStatusCases() []podStatusCase {
	mine := func(mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := pod("p", "node-a", false)
		p.Labels = map[string]string{"app": "web"}
		p.Annotations = map[string]string{"example.com/a": "1"}
		p.Status.Phase = corev1.PodRunning
		p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("p-gpu")}}
		p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "p-ext",
			RequestMappings: []corev1.ContainerExtendedResourceRequest{{ContainerName: "c", ResourceName: "example.com/dev", RequestName: "r"}}}
		p.Status.NodeAllocatableResourceClaimStatuses = []corev1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "p-alloc", Containers: []string{"c"}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	const labels = `node "node-a" cannot update labels through pod status`
	return []podStatusCase{
		{"reports status", mine(), mine(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded; p.Status.Message = "done" }), ""},
		{"sends labels as nil where stored empty", mine(func(p *corev1.Pod) { p.Labels = map[string]string{} }), mine(func(p *corev1.Pod) { p.Labels = nil }), ""},
		{"adds a label", mine(), mine(func(p *corev1.Pod) { p.Labels["role"] = "db" }), labels},
		{"changes a label", mine(), mine(func(p *corev1.Pod) { p.Labels["app"] = "db" }), labels},
		{"drops the labels", mine(), mine(func(p *corev1.Pod) { p.Labels = nil }), labels},
		{"another node's pod", pod("p", "node-b", false), pod("p", "node-b", false), `node "node-a" can only update pod status for pods with spec.nodeName set to itself`},
		{"an unbound pod", pod("p", "", false), pod("p", "node-a", false), `node "node-a" can only update pod status for pods with spec.nodeName set to itself`},
		{"renames a resource claim", mine(), mine(func(p *corev1.Pod) { p.Status.ResourceClaimStatuses[0].ResourceClaimName = ptr.To("other") }), `node "node-a" cannot update resource claim statues`},
		{"drops the resource claim statuses", mine(), mine(func(p *corev1.Pod) { p.Status.ResourceClaimStatuses = nil }), `node "node-a" cannot update resource claim statues`},
		{"changes the extended resource claim", mine(), mine(func(p *corev1.Pod) { p.Status.ExtendedResourceClaimStatus.RequestMappings[0].RequestName = "s" }), `node "node-a" cannot update extended resource claim status`},
		{"drops the extended resource claim", mine(), mine(func(p *corev1.Pod) { p.Status.ExtendedResourceClaimStatus = nil }), `node "node-a" cannot update extended resource claim status`},
		{"changes a node allocatable claim", mine(), mine(func(p *corev1.Pod) {
			p.Status.NodeAllocatableResourceClaimStatuses[0].Mapping = []corev1.NodeAllocatableMappedResources{{Name: "cpu", Quantity: ptr.To(resource.MustParse("1"))}}
		}), `node "node-a" cannot update node allocatable resource claim statuses`},
	}
}

func TestPodStatus(t *testing.T) {
	cases := append(podStatusCases(),
		// berth's own rule, stricter than upstream's.
		podStatusCase{"adds an annotation", pod("p", "node-a", false), withAnnotations(pod("p", "node-a", false), "example.com/a", "1"), `node "node-a" cannot update annotations through pod status`},
		podStatusCase{"writes a berth-private annotation", pod("p", "node-a", false), withAnnotations(pod("p", "node-a", false), "internal.berth.io/x", "1"), `node "node-a" cannot update annotations through pod status`},
		podStatusCase{"drops an annotation", withAnnotations(pod("p", "node-a", false), "example.com/a", "1"), pod("p", "node-a", false), `node "node-a" cannot update annotations through pod status`},
	)
	p := New(boundPods{}, registeredNodes{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), attrs(nodeA, admission.Update, podsGVR, "status", tc.new, tc.old), nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			want := `pods "p" is forbidden: ` + tc.want
			if !apierrors.IsForbidden(err) || err.Error() != want {
				t.Fatalf("err = %v, want 403 %q", err, want)
			}
		})
	}
}

func withAnnotations(p *corev1.Pod, kv ...string) *corev1.Pod {
	p.Annotations = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	return p
}
