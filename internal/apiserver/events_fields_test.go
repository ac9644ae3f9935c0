package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Core events are selected by upstream's fields: "source" is the source
// component, or the reporting controller of an events.k8s.io recorder.
func TestCoreEventFieldSelectorsAreUpstreams(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	if _, err := s.client.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "new-style"}, Regarding: corev1.ObjectReference{Namespace: "default"},
		EventTime: metav1.MicroTime{Time: time.Now()}, Note: "n", Action: "Do", Reason: "Test", Type: "Normal",
		ReportingController: "test-controller", ReportingInstance: "test-node",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "old-style"}, InvolvedObject: corev1.ObjectReference{Namespace: "default"},
		Reason: "Test", Message: "m", Type: "Warning", Source: corev1.EventSource{Component: "kubelet"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for selector, want := range map[string]string{
		"source=test-controller":             "new-style",
		"source=kubelet":                     "old-style",
		"reportingComponent=test-controller": "new-style",
		"type=Warning":                       "old-style",
	} {
		list, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != want {
			t.Errorf("events with %s: %v, %v; want only %s", selector, list, err, want)
		}
	}
}
