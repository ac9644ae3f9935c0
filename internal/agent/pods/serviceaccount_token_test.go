package pods

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// TestProjectedServiceAccountTokenIsBoundCachedAndRenewed: the agent asks
// for a token bound to the pod, for the projection's audience and lifetime,
// reuses it across resyncs, and asks again once 80% of its life is gone.
func TestProjectedServiceAccountTokenIsBoundCachedAndRenewed(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	var requests []*authenticationv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateAction)
		if create.GetSubresource() != "token" {
			return false, nil, nil
		}
		req := create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests = append(requests, req)
		req.Status = authenticationv1.TokenRequestStatus{
			Token:               fmt.Sprintf("token-%d", len(requests)),
			ExpirationTimestamp: metav1.NewTime(clock.Now().Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)),
		}
		return true, req, nil
	})
	m := New(Config{NodeName: testNode, DataDir: t.TempDir(), Clock: clock}, client, nil, nil, slog.New(slog.DiscardHandler))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "uid-web"},
		Spec: corev1.PodSpec{ServiceAccountName: "robot"}}
	src := &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr.To[int64](1000)}

	read := func() string {
		t.Helper()
		files, err := m.serviceAccountTokenFiles(context.Background(), pod, src)
		if err != nil {
			t.Fatal(err)
		}
		return string(files["token"])
	}
	if got := read(); got != "token-1" {
		t.Fatalf("first read = %q, want token-1", got)
	}
	req := requests[0]
	if ref := req.Spec.BoundObjectRef; ref == nil || ref.Kind != "Pod" || ref.Name != "web" || ref.UID != "uid-web" {
		t.Fatalf("token not bound to the pod: %+v", ref)
	}
	if len(req.Spec.Audiences) != 1 || req.Spec.Audiences[0] != "vault" || *req.Spec.ExpirationSeconds != 1000 {
		t.Fatalf("request spec = %+v", req.Spec)
	}

	clock.Step(799 * time.Second)
	if got := read(); got != "token-1" || len(requests) != 1 {
		t.Fatalf("before 80%% of the lifetime: %q after %d requests, want the cached token-1", got, len(requests))
	}
	clock.Step(time.Second)
	if got := read(); got != "token-2" {
		t.Fatalf("at 80%% of the lifetime: %q, want a renewed token-2", got)
	}

	m.removePodDir(string(pod.UID))
	if got := read(); got != "token-3" {
		t.Fatalf("after the pod is gone its token must not be reused: %q", got)
	}
}

// TestProjectedServiceAccountTokenRefusedLeavesNoFile: a refused request is
// an error for the volume (the pod waits), not an empty token file.
func TestProjectedServiceAccountTokenRefusedLeavesNoFile(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("forbidden")
	})
	m := New(Config{NodeName: testNode, DataDir: t.TempDir()}, client, nil, nil, slog.New(slog.DiscardHandler))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "uid-web"}}
	files, err := m.serviceAccountTokenFiles(context.Background(), pod, &corev1.ServiceAccountTokenProjection{Path: "token"})
	if err == nil || files != nil {
		t.Fatalf("files %v, err %v: want an error and no files", files, err)
	}
}
