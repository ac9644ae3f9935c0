package tables

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkConvertPodList measures a `kubectl get pods` of 1000 pods.
func BenchmarkConvertPodList(b *testing.B) {
	c, err := New(func() time.Time { return now })
	if err != nil {
		b.Fatal(err)
	}
	list := &corev1.PodList{}
	for i := range 1000 {
		p := pod(corev1.PodRunning, 0, running(true))
		p.Name = fmt.Sprintf("pod-%d", i)
		list.Items = append(list.Items, *p)
	}
	for b.Loop() {
		if _, err := c.Convert(list, metav1.IncludeMetadata); err != nil {
			b.Fatal(err)
		}
	}
}
