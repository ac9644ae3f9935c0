package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Pods go through upstream's pod registry strategy: each of these is
// refused with a 422 naming the field kube-apiserver's validation names,
// and nothing is written. berth's earlier hand-written rules accepted all
// of them.
func TestInvalidPodsAreRefusedAsUpstreamRefusesThem(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		field  string
	}{
		{"probe without a handler", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{PeriodSeconds: 5}
		}, "spec.containers[0].livenessProbe"},
		{"negative probe period", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: -1,
				ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}, "spec.containers[0].readinessProbe.periodSeconds"},
		{"volume with two sources", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}}}
		}, "spec.volumes[0].hostPath"},
		{"mount of a missing volume", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nowhere", MountPath: "/x"}}
		}, "spec.containers[0].volumeMounts[0].name"},
		{"subPath escaping its volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/x", SubPath: "../etc"}}
		}, "spec.containers[0].volumeMounts.subPath"}, // upstream names no index here
		{"runAsUser below zero", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](-1)}
		}, "spec.containers[0].securityContext.runAsUser"},
		{"env from a field that does not exist", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nothing"}}}}
		}, "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath"},
		{"toleration with a value and Exists", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}, "spec.tolerations[0].operator"},
		{"affinity term without a topology key", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}}}}
		}, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod("bad")
			p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
			tc.mutate(p)
			before := storeRevision(t, s)
			code, status := rawRequest(t, s, "POST", "/api/v1/namespaces/default/pods", "application/json", mustJSON(t, p))
			if code != 422 || status.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("got HTTP %d reason %q (%s), want 422 Invalid", code, status.Reason, status.Message)
			}
			if !hasCause(status, tc.field) {
				t.Fatalf("no cause for field %s in %+v", tc.field, status.Details)
			}
			assertStoreUnchanged(t, s, before)
		})
	}
}

// Secrets, ConfigMaps and Nodes go through upstream's strategies too.
func TestInvalidObjectsOfOtherCoreKindsAreRefusedAsUpstream(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	cases := []struct {
		name, path string
		obj        any
		field      string
	}{
		{"TLS secret without its key", "/api/v1/namespaces/default/secrets", &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: []byte("x")},
		}, "data[tls.key]"},
		{"dockercfg secret that is not JSON", "/api/v1/namespaces/default/secrets", &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{not json")},
		}, "data[.dockerconfigjson]"},
		{"configmap key with a slash", "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a/b": "x"},
		}, "data[a/b]"},
		{"node with a taint without an effect", "/api/v1/nodes", &corev1.Node{
			TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k"}}},
		}, "metadata.taints[0].effect"},
		{"namespace with a finalizer that is no name", "/api/v1/namespaces", &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "fin"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"bad/fin/alizer"}},
		}, "spec.finalizers"},
		{"namespace with a finalizer neither standard nor qualified", "/api/v1/namespaces", &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "fin2"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"mine"}},
		}, "spec.finalizers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := storeRevision(t, s)
			code, status := rawRequest(t, s, "POST", tc.path, "application/json", mustJSON(t, tc.obj))
			if code != 422 || status.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("got HTTP %d reason %q (%s), want 422 Invalid", code, status.Reason, status.Message)
			}
			if !hasCause(status, tc.field) {
				t.Fatalf("no cause for field %s in %+v", tc.field, status.Details)
			}
			assertStoreUnchanged(t, s, before)
		})
	}
}
