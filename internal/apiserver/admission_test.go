package apiserver

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
)

// denyPodStatusFromNodes is a stand-in for NodeRestriction: it refuses
// status updates of the pod named "guarded".
type denyPodStatusFromNodes struct{}

func (denyPodStatusFromNodes) Handles(op admission.Operation) bool { return op == admission.Update }

func (denyPodStatusFromNodes) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().Resource == "pods" && a.GetSubresource() == "status" && a.GetName() == "guarded" {
		return admission.NewForbidden(a, errors.New("status of this pod is not yours to write"))
	}
	return nil
}

func TestAdmissionHook(t *testing.T) {
	t.Parallel()
	s := newTestServerWith(t, func(c *Config) { c.Admission = denyPodStatusFromNodes{} })
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, testPod("guarded"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := storeRevision(t, s)
	pod.Status.Phase = corev1.PodRunning
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("status update refused by admission: %v, want 403", err)
	}
	assertStoreUnchanged(t, s, before)
	pod.Labels["ok"] = "yes"
	if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update the plugin does not handle: %v", err)
	}
}
