package internalform

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
)

func podAttributes(pod *corev1.Pod) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), pod.Namespace, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

// Upstream's DefaultTolerationSeconds plugin, which asserts *api.Pod, adds
// its tolerations to berth's v1 pod.
func TestUpstreamMutatingPluginChangesTheV1Object(t *testing.T) {
	plugin := defaulttolerationseconds.NewDefaultTolerationSeconds()
	plugin.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := Wrap(plugin).(admission.MutationInterface).Admit(context.Background(), podAttributes(pod), nil); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Tolerations) != 2 || pod.Spec.Tolerations[0].Key != corev1.TaintNodeNotReady ||
		pod.Spec.Tolerations[1].Key != corev1.TaintNodeUnreachable || *pod.Spec.Tolerations[1].TolerationSeconds != 300 {
		t.Fatalf("tolerations after the plugin: %+v", pod.Spec.Tolerations)
	}
}

// seen records what a plugin was given.
type seen struct {
	obj        runtime.Object
	annotation string
}

func (s *seen) Handles(admission.Operation) bool { return true }
func (s *seen) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	s.obj = a.GetObject()
	return a.AddAnnotation("example.com/seen", s.annotation)
}

// annotated records the annotations added to the request's attributes.
type annotated struct {
	admission.Attributes
	got map[string]string
}

func (a *annotated) AddAnnotation(key, value string) error {
	a.got[key] = value
	return nil
}

// A validating plugin sees the internal form, and its annotations reach the
// request's attributes.
func TestValidatingPluginSeesTheInternalFormAndAnnotatesTheRequest(t *testing.T) {
	plugin := &seen{annotation: "yes"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	attrs := &annotated{Attributes: podAttributes(pod), got: map[string]string{}}
	if err := Wrap(plugin).(admission.ValidationInterface).Validate(context.Background(), attrs, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := plugin.obj.(*api.Pod); !ok {
		t.Fatalf("the plugin got %T, want *core.Pod", plugin.obj)
	}
	if attrs.got["example.com/seen"] != "yes" {
		t.Fatalf("request annotations %v, want the plugin's", attrs.got)
	}
}

// A kind the legacy scheme does not know reaches the plugin unchanged.
func TestUnknownKindsPassAsTheyAre(t *testing.T) {
	plugin := &seen{}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	attrs := admission.NewAttributesRecord(obj, nil, metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"), "", "x",
		metav1.SchemeGroupVersion.WithResource("things"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	if err := Wrap(plugin).(admission.ValidationInterface).Validate(context.Background(), attrs, nil); err != nil {
		t.Fatal(err)
	}
	if plugin.obj != obj {
		t.Fatalf("the plugin got %T %p, want the request's own object", plugin.obj, plugin.obj)
	}
}
