package node

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestPodViewForNodes(t *testing.T) {
	t.Parallel()
	stored := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:          "p",
		Annotations:   map[string]string{PrivateAnnotationPrefix + "hint": "x", "example.com/public": "y"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}}
	original := stored.DeepCopy()
	asNode := genericapirequest.WithUser(context.Background(), nodeUser("node-a"))
	asAdmin := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}})

	view := PodView(asNode, podsResource)
	if view == nil {
		t.Fatal("nodes get no view of pods")
	}
	got := view(stored).(*corev1.Pod)
	if len(got.ManagedFields) != 0 {
		t.Errorf("node sees managedFields %v", got.ManagedFields)
	}
	if want := map[string]string{"example.com/public": "y"}; !maps.Equal(got.Annotations, want) {
		t.Errorf("node sees annotations %v, want %v", got.Annotations, want)
	}
	if got.Name != "p" {
		t.Errorf("view lost the name: %q", got.Name)
	}
	if !equalPods(stored, original) {
		t.Error("the view changed the stored (shared) pod")
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	if view(plain) != plain {
		t.Error("a pod with nothing to hide is copied")
	}

	for name, tc := range map[string]struct {
		ctx context.Context
		gr  schema.GroupResource
	}{
		"admin reads pods as stored":           {asAdmin, podsResource},
		"no user: as stored":                   {context.Background(), podsResource},
		"nodes read other resources as stored": {asNode, schema.GroupResource{Resource: "configmaps"}},
	} {
		if PodView(tc.ctx, tc.gr) != nil {
			t.Errorf("%s: got a view", name)
		}
	}
}

func equalPods(a, b *corev1.Pod) bool {
	return maps.Equal(a.Annotations, b.Annotations) && len(a.ManagedFields) == len(b.ManagedFields)
}
