package noderestriction

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	apiv1 "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/auth/nodeidentifier"
	upstream "k8s.io/kubernetes/plugin/pkg/admission/noderestriction"
)

// berth keeps its own copy of upstream's pods/status rules: upstream's
// plugin works on internal types and would link its whole tree (CSI
// translation, feature gates, every internal API group) into the binary.
// This test holds the copy to upstream's answers, error text included.
func TestPodStatusMatchesUpstream(t *testing.T) {
	theirs := upstream.NewPlugin(nodeidentifier.NewDefaultNodeIdentifier())
	ours := New(boundPods{}, registeredNodes{})
	for _, tc := range podStatusCases() {
		t.Run(tc.name, func(t *testing.T) {
			old, obj := internalPod(t, tc.old), internalPod(t, tc.new)
			want := theirs.Admit(context.Background(), admission.NewAttributesRecord(obj, old, api.SchemeGroupVersion.WithKind("Pod"),
				"default", "p", api.SchemeGroupVersion.WithResource("pods"), "status", admission.Update, nil, false, nodeA), nil)
			got := ours.Validate(context.Background(), attrs(nodeA, admission.Update, podsGVR, "status", tc.new, tc.old), nil)
			if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
				t.Fatalf("berth: %v\nupstream: %v", got, want)
			}
		})
	}
}

func internalPod(t *testing.T, in *corev1.Pod) *api.Pod {
	t.Helper()
	out := &api.Pod{}
	if err := apiv1.Convert_v1_Pod_To_core_Pod(in.DeepCopy(), out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}
