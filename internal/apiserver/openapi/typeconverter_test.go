package openapi

import (
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

func TestTypeConverterKnowsListKeys(t *testing.T) {
	tc, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox",
			Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}}},
	}
	typed, err := tc.ObjectToTyped(pod)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := typed.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	set := fields.String()
	for _, want := range []string{`.spec.containers[name="app"].image`, `.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"].containerPort`} {
		if !strings.Contains(set, want) {
			t.Errorf("field set lacks %s (lists treated as atomic?):\n%s", want, set)
		}
	}
	// The deduced converter the REST core could otherwise use cannot do this.
	deduced, err := managedfields.NewDeducedTypeConverter().ObjectToTyped(pod)
	if err != nil {
		t.Fatal(err)
	}
	if ds, _ := deduced.ToFieldSet(); strings.Contains(ds.String(), `name="app"`) {
		t.Errorf("the deduced converter keys containers too; this test proves nothing")
	}
	// Kinds of every served group resolve, not only core.
	if _, err := tc.ObjectToTyped(&coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}}); err != nil {
		t.Errorf("Lease: %v", err)
	}
}
