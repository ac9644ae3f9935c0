package internalform

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// labeler is an upstream-style plugin: it labels the internal pod it gets
// and records which object that was.
type labeler struct {
	key  string
	got  []runtime.Object
	seen []map[string]string // the labels it found
}

func (l *labeler) Handles(admission.Operation) bool { return true }
func (l *labeler) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := a.GetObject().(*api.Pod)
	l.got = append(l.got, pod)
	l.seen = append(l.seen, copyLabels(pod.Labels))
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[l.key] = "yes"
	return nil
}
func (l *labeler) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	l.got = append(l.got, a.GetObject())
	return nil
}

// v1Labeler is a plugin on berth's v1 object (a webhook, say).
type v1Labeler struct {
	key      string
	readOnly bool
	seen     map[string]string
}

func (l *v1Labeler) Handles(admission.Operation) bool { return true }
func (l *v1Labeler) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := a.GetObject().(*corev1.Pod)
	l.seen = copyLabels(pod.Labels)
	if !l.readOnly {
		pod.Labels[l.key] = "yes"
	}
	return nil
}

type readOnlyV1 struct{ *v1Labeler }

func (readOnlyV1) AdmitReadsOnly() {}

func copyLabels(in map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, in)
	return out
}

func newPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
}

// Wrapped plugins share one internal form; a v1 plugin between them sees
// what they changed, and the next wrapped plugin sees what it changed.
func TestChainSharesTheInternalFormAroundV1Plugins(t *testing.T) {
	first, second, third := &labeler{key: "first"}, &labeler{key: "second"}, &labeler{key: "third"}
	v1 := &v1Labeler{key: "webhook"}
	pod := newPod()
	c := Chain(Wrap(first), Wrap(second), v1, Wrap(third))
	if err := c.(admission.MutationInterface).Admit(context.Background(), podAttributes(pod), nil); err != nil {
		t.Fatal(err)
	}
	if first.got[0] != second.got[0] {
		t.Error("adjacent wrapped plugins got different internal objects: the pod was converted twice")
	}
	if v1.seen["first"] != "yes" || v1.seen["second"] != "yes" {
		t.Errorf("the v1 plugin saw labels %v; want the wrapped plugins' changes", v1.seen)
	}
	if third.seen[0]["webhook"] != "yes" {
		t.Errorf("the wrapped plugin after the v1 one saw labels %v; want the v1 plugin's change", third.seen[0])
	}
	if want := map[string]string{"first": "yes", "second": "yes", "webhook": "yes", "third": "yes"}; !maps.Equal(pod.Labels, want) {
		t.Errorf("the request's pod has labels %v; want %v", pod.Labels, want)
	}
}

// A read-only admitter sees the changes but does not cost a conversion.
func TestChainKeepsTheFormAcrossAReadOnlyAdmitter(t *testing.T) {
	first, second := &labeler{key: "first"}, &labeler{key: "second"}
	check := readOnlyV1{&v1Labeler{readOnly: true}}
	pod := newPod()
	c := Chain(Wrap(first), check, Wrap(second))
	if err := c.(admission.MutationInterface).Admit(context.Background(), podAttributes(pod), nil); err != nil {
		t.Fatal(err)
	}
	if check.seen["first"] != "yes" {
		t.Errorf("the read-only plugin saw %v; want the first plugin's change", check.seen)
	}
	if first.got[0] != second.got[0] {
		t.Error("the form was converted again after a read-only admitter")
	}
	if pod.Labels["first"] != "yes" || pod.Labels["second"] != "yes" {
		t.Errorf("the request's pod has labels %v", pod.Labels)
	}
}

// Validating plugins, nested chains included, share one conversion.
func TestChainValidatesOnOneConversion(t *testing.T) {
	first, second := &labeler{key: "first"}, &labeler{key: "second"}
	c := Chain(Chain(Wrap(first)), Wrap(second))
	if err := c.(admission.ValidationInterface).Validate(context.Background(), podAttributes(newPod()), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := first.got[0].(*api.Pod); !ok || first.got[0] != second.got[0] {
		t.Errorf("validators got %T and %T, not one internal pod", first.got[0], second.got[0])
	}
}
