package node

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/storage/ephemeral"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
)

// kind is a kind of object a node may read because its pods reference it.
type kind string

const (
	secretKind         kind = "secrets"
	configMapKind      kind = "configmaps"
	serviceAccountKind kind = "serviceaccounts"
	claimKind          kind = "persistentvolumeclaims"
)

// objectRef names one namespaced object of a kind.
type objectRef struct {
	kind      kind
	namespace string
	name      string
}

// podReferences lists every object pod's agent must read to run it, as
// upstream's Node authorizer graph (Graph.AddPod) finds them: the service
// account, the secrets and config maps of every volume (projected ones and
// volume plugins' credentials included), image pull secrets and env
// sources (upstream's pod visitors), and the claims of its volumes,
// ephemeral ones by their generated names.
func podReferences(pod *corev1.Pod) []objectRef {
	refs := refSet{namespace: pod.Namespace, seen: map[objectRef]bool{}}
	refs.add(serviceAccountKind, pod.Spec.ServiceAccountName)
	podutil.VisitPodSecretNames(pod, func(name string) bool { refs.add(secretKind, name); return true })
	podutil.VisitPodConfigmapNames(pod, func(name string) bool { refs.add(configMapKind, name); return true })
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			refs.add(claimKind, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			refs.add(claimKind, ephemeral.VolumeClaimName(pod, v))
		}
	}
	return refs.list
}

// refSet collects references in one namespace, each once.
type refSet struct {
	namespace string
	seen      map[objectRef]bool
	list      []objectRef
}

func (s *refSet) add(k kind, name string) {
	if name == "" {
		return
	}
	ref := objectRef{kind: k, namespace: s.namespace, name: name}
	if !s.seen[ref] {
		s.seen[ref] = true
		s.list = append(s.list, ref)
	}
}

// podRecord is what the graph's pod informer keeps of a pod: its name and
// version, its node, service account and the objects it references,
// worked out once as the pod arrives. The informer's store holds one per pod in the cluster, and a
// *corev1.Pod, however trimmed, is a 1.2 KiB struct; this is ~300 B.
type podRecord struct {
	metav1.ObjectMeta // Name, Namespace, UID and ResourceVersion only
	bound             boundPod
}

func newPodRecord(pod *corev1.Pod) *podRecord {
	return &podRecord{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		bound:      newBoundPod(pod),
	}
}

// GetObjectKind and DeepCopyObject make a podRecord a runtime.Object, as
// informers' stores expect of what they hold.
func (r *podRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (r *podRecord) DeepCopyObject() runtime.Object {
	out := &podRecord{bound: r.bound}
	out.bound.refs = slices.Clone(r.bound.refs)
	r.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// keepGraphParts is the pod informer's transform (see podRecord).
func keepGraphParts(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		return newPodRecord(pod), nil
	}
	return obj, nil
}
