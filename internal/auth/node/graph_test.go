package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodReferencesEverySource(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "sa",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
			Volumes: []corev1.Volume{
				{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
				{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
				{VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
				{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
				}}}},
				{VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
				{VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			},
			InitContainers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-envfrom-cm"}}}}}},
			Containers: []corev1.Container{{
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-secret"}}}},
				Env: []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "k"}}},
					{Name: "C", Value: "plain"},
					{Name: "D", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "other"}}},
				},
			}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-secret"}}}}},
			}}},
		},
	}
	want := []objectRef{
		{serviceAccountKind, "ns", "sa"},
		{secretKind, "ns", "pull"},
		{secretKind, "ns", "vol-secret"},
		{configMapKind, "ns", "vol-cm"},
		{claimKind, "ns", "claim"},
		{secretKind, "ns", "proj-secret"},
		{configMapKind, "ns", "proj-cm"},
		{secretKind, "ns", "csi-secret"},
		{configMapKind, "ns", "init-envfrom-cm"},
		{secretKind, "ns", "envfrom-secret"},
		{secretKind, "ns", "env-secret"},
		{configMapKind, "ns", "env-cm"},
		{secretKind, "ns", "debug-secret"},
		{claimKind, "ns", "p-scratch"}, // an ephemeral volume's claim: POD-VOLUME
	}
	got := podReferences(pod)
	order := func(a, b objectRef) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	}
	slices.SortFunc(got, order)
	slices.SortFunc(want, order)
	if !slices.Equal(got, want) {
		t.Fatalf("references:\n got %v\nwant %v", got, want)
	}
	// What the graph's informer caches of the pod: the same, and a copy of
	// it is its own.
	pod.Spec.NodeName = "node-a"
	pod.ResourceVersion = "7"
	cached, err := keepGraphParts(pod)
	if err != nil {
		t.Fatal(err)
	}
	r := cached.(*podRecord)
	slices.SortFunc(r.bound.refs, order)
	if !slices.Equal(r.bound.refs, want) || r.bound.node != "node-a" || r.Name != "p" || r.Namespace != "ns" || r.ResourceVersion != "7" {
		t.Fatalf("cached part of the pod: %+v", r)
	}
	c := r.DeepCopyObject().(*podRecord)
	c.bound.refs[0].name = "changed"
	if r.bound.refs[0].name == "changed" {
		t.Fatal("a copy of the cached part shares its references")
	}
}

func TestGraphFollowsPodsAcrossChanges(t *testing.T) {
	t.Parallel()
	g := NewGraph()
	shared := func(name, node string) *corev1.Pod {
		p := podOn(name, node)
		p.Spec.Volumes[0].Secret.SecretName = "shared"
		return p
	}
	g.SetPod(shared("p1", "node-a"))
	g.SetPod(shared("p2", "node-a"))
	steps := []struct {
		name   string
		change func()
		want   map[string]bool // node -> may read secret default/shared
		pod    map[string]bool // node -> p1 bound to it
	}{
		{"two pods share a secret", func() {}, map[string]bool{"node-a": true, "node-b": false}, map[string]bool{"node-a": true}},
		{"one of them goes", func() { g.DeletePod("default", "p2") }, map[string]bool{"node-a": true}, map[string]bool{"node-a": true}},
		{"the other is recreated on node-b", func() { g.SetPod(shared("p1", "node-b")) }, map[string]bool{"node-a": false, "node-b": true}, map[string]bool{"node-a": false, "node-b": true}},
		{"its volume is gone", func() { p := podOn("p1", "node-b"); g.SetPod(p) }, map[string]bool{"node-b": false}, map[string]bool{"node-b": true}},
		{"an unbound pod gives nothing", func() { g.SetPod(shared("p1", "")) }, map[string]bool{"node-a": false, "node-b": false, "": false}, map[string]bool{"node-b": false, "": false}},
		{"deleting an unknown pod is harmless", func() { g.DeletePod("default", "nope") }, map[string]bool{"node-b": false}, nil},
	}
	for _, s := range steps {
		s.change()
		for node, want := range s.want {
			if got := g.Referenced(node, secretKind, "default", "shared"); got != want {
				t.Errorf("%s: %s reads shared = %v, want %v", s.name, node, got, want)
			}
		}
		for node, want := range s.pod {
			if got := g.PodBoundTo("default", "p1", node); got != want {
				t.Errorf("%s: p1 bound to %s = %v, want %v", s.name, node, got, want)
			}
		}
	}
	if len(g.users) != 0 || len(g.pods) != 0 {
		t.Errorf("graph keeps %d objects and %d pods after all are gone", len(g.users), len(g.pods))
	}
}
