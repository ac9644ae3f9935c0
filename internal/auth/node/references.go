package node

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// graphPod is the part of a pod the graph reads (SetPod, podReferences).
// The node authorizer's pod informer caches only this: whole pods would
// be one more copy of every pod in the server's memory, for nothing.
func graphPod(pod *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
	}}
	out.Spec.NodeName = pod.Spec.NodeName
	out.Spec.ServiceAccountName = pod.Spec.ServiceAccountName
	out.Spec.ImagePullSecrets = pod.Spec.ImagePullSecrets
	out.Spec.Volumes = pod.Spec.Volumes
	for _, c := range allContainers(pod) {
		if len(c.EnvFrom) == 0 && !hasValueFrom(c.Env) {
			continue
		}
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Env: c.Env, EnvFrom: c.EnvFrom})
	}
	return out
}

func hasValueFrom(env []corev1.EnvVar) bool {
	for _, e := range env {
		if e.ValueFrom != nil {
			return true
		}
	}
	return false
}

// keepGraphParts is the pod informer's transform (see graphPod).
func keepGraphParts(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		return graphPod(pod), nil
	}
	return obj, nil
}
