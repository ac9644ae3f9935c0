package pcrcleaner

import (
	"context"
	"errors"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth/berth/internal/testkit/wait"
)

// Requests older than the threshold are deleted; younger ones stay.
func TestOldRequestsAreDeleted(t *testing.T) {
	now := time.Now()
	request := func(name string, age time.Duration) *certificatesv1.PodCertificateRequest {
		return &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(now.Add(-age))}}
	}
	client := fake.NewClientset(request("stale", threshold+time.Minute), request("fresh", time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, Config{Client: client}, clocktesting.NewFakePassiveClock(now), 10*time.Millisecond)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cleaner: %v", err)
		}
	}()

	requests := client.CertificatesV1().PodCertificateRequests("apps")
	wait.UntilCtx(t, 30*time.Second, "the stale request to be deleted", func(ctx context.Context) error {
		if _, err := requests.Get(ctx, "stale", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return errors.New("still there")
		}
		return nil
	})
	if _, err := requests.Get(ctx, "fresh", metav1.GetOptions{}); err != nil {
		t.Fatalf("a request younger than %s: %v, want it kept", threshold, err)
	}
}
