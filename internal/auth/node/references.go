package node

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// podReferences lists every object pod's agent must read to run it: the
// service account, image pull secrets, volume sources (projected ones
// included) and env/envFrom sources of every container. Upstream's walker
// (pkg/api/v1/pod.VisitPodSecretNames) is in k8s.io/kubernetes, which is not
// importable.
func podReferences(pod *corev1.Pod) []objectRef {
	refs := refSet{namespace: pod.Namespace, seen: map[objectRef]bool{}}
	refs.add(serviceAccountKind, pod.Spec.ServiceAccountName)
	for _, s := range pod.Spec.ImagePullSecrets {
		refs.add(secretKind, s.Name)
	}
	for i := range pod.Spec.Volumes {
		refs.addVolume(&pod.Spec.Volumes[i].VolumeSource)
	}
	for _, c := range allContainers(pod) {
		refs.addEnv(c.Env, c.EnvFrom)
	}
	return refs.list
}

// allContainers returns the env-bearing parts of every container kind.
func allContainers(pod *corev1.Pod) []corev1.Container {
	out := append([]corev1.Container(nil), pod.Spec.InitContainers...)
	out = append(out, pod.Spec.Containers...)
	for _, e := range pod.Spec.EphemeralContainers {
		out = append(out, corev1.Container{Env: e.Env, EnvFrom: e.EnvFrom})
	}
	return out
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

func (s *refSet) addVolume(v *corev1.VolumeSource) {
	switch {
	case v.Secret != nil:
		s.add(secretKind, v.Secret.SecretName)
	case v.ConfigMap != nil:
		s.add(configMapKind, v.ConfigMap.Name)
	case v.PersistentVolumeClaim != nil:
		s.add(claimKind, v.PersistentVolumeClaim.ClaimName)
	case v.Projected != nil:
		for _, p := range v.Projected.Sources {
			if p.Secret != nil {
				s.add(secretKind, p.Secret.Name)
			}
			if p.ConfigMap != nil {
				s.add(configMapKind, p.ConfigMap.Name)
			}
		}
	}
	s.addVolumePluginSecrets(v)
}

// addVolumePluginSecrets adds the secrets that volume plugins authenticate with.
func (s *refSet) addVolumePluginSecrets(v *corev1.VolumeSource) {
	var ref *corev1.LocalObjectReference
	switch {
	case v.CSI != nil:
		ref = v.CSI.NodePublishSecretRef
	case v.ISCSI != nil:
		ref = v.ISCSI.SecretRef
	case v.RBD != nil:
		ref = v.RBD.SecretRef
	case v.CephFS != nil:
		ref = v.CephFS.SecretRef
	case v.FlexVolume != nil:
		ref = v.FlexVolume.SecretRef
	case v.StorageOS != nil:
		ref = v.StorageOS.SecretRef
	case v.ScaleIO != nil:
		ref = v.ScaleIO.SecretRef
	}
	if ref != nil {
		s.add(secretKind, ref.Name)
	}
	if v.AzureFile != nil {
		s.add(secretKind, v.AzureFile.SecretName)
	}
}

func (s *refSet) addEnv(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for _, e := range envFrom {
		if e.SecretRef != nil {
			s.add(secretKind, e.SecretRef.Name)
		}
		if e.ConfigMapRef != nil {
			s.add(configMapKind, e.ConfigMapRef.Name)
		}
	}
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if e.ValueFrom.SecretKeyRef != nil {
			s.add(secretKind, e.ValueFrom.SecretKeyRef.Name)
		}
		if e.ValueFrom.ConfigMapKeyRef != nil {
			s.add(configMapKind, e.ValueFrom.ConfigMapKeyRef.Name)
		}
	}
}

// podRecord is what the graph's pod informer keeps of a pod: its name and
// version, its node and the objects it references, worked out once as the
// pod arrives. The informer's store holds one per pod in the cluster, and a
// *corev1.Pod, however trimmed, is a 1.2 KiB struct; this is ~300 B.
type podRecord struct {
	metav1.ObjectMeta // Name, Namespace, UID and ResourceVersion only
	bound             boundPod
}

func newPodRecord(pod *corev1.Pod) *podRecord {
	return &podRecord{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		bound:      boundPod{node: pod.Spec.NodeName, refs: podReferences(pod)},
	}
}

// GetObjectKind and DeepCopyObject make a podRecord a runtime.Object, as
// informers' stores expect of what they hold.
func (r *podRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (r *podRecord) DeepCopyObject() runtime.Object {
	out := &podRecord{bound: boundPod{node: r.bound.node, refs: slices.Clone(r.bound.refs)}}
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
