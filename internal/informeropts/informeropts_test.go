package informeropts_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/informeropts"
)

func TestStripManagedFieldsKeepsTheRest(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{NodeName: "n"},
	}
	got, err := informeropts.StripManagedFields(pod)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(*corev1.Pod)
	if out.ManagedFields != nil || out.Name != "p" || out.Labels["a"] != "b" || out.Spec.NodeName != "n" {
		t.Fatalf("stripped pod: %+v", out)
	}
	// A tombstone passes through untouched.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if got, err := informeropts.StripManagedFields(tomb); err != nil || got != any(tomb) {
		t.Fatalf("tombstone: %v %v", got, err)
	}
}
