package node

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// PrivateAnnotationPrefix starts the annotations berth keeps to itself:
// nodes never see them.
const PrivateAnnotationPrefix = "internal.berth.io/"

var podsResource = schema.GroupResource{Resource: "pods"}

// PodView is the API server's read view (apiserver.Config.ReadView) for
// node agents: the pods a node reads omit metadata.managedFields (who wrote
// which field, none of its business) and berth-private annotations. Other
// requesters and resources are served as stored.
func PodView(ctx context.Context, gr schema.GroupResource) func(runtime.Object) runtime.Object {
	if gr != podsResource {
		return nil
	}
	u, _ := genericapirequest.UserFrom(ctx)
	if _, isNode := Name(u); !isNode {
		return nil
	}
	return nodeViewOfPod
}

// nodeViewOfPod returns pod without what a node may not see. The stored
// pod is shared: only a shallow copy with new metadata fields is changed.
func nodeViewOfPod(obj runtime.Object) runtime.Object {
	pod, ok := obj.(*corev1.Pod)
	if !ok || (len(pod.ManagedFields) == 0 && !hasPrivateAnnotation(pod.Annotations)) {
		return obj
	}
	view := *pod
	view.ManagedFields = nil
	view.Annotations = nil
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, PrivateAnnotationPrefix) {
			continue
		}
		if view.Annotations == nil {
			view.Annotations = map[string]string{}
		}
		view.Annotations[k] = v
	}
	return &view
}

func hasPrivateAnnotation(annotations map[string]string) bool {
	for k := range annotations {
		if strings.HasPrefix(k, PrivateAnnotationPrefix) {
			return true
		}
	}
	return false
}
