package apiserver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/wait"
)

// As kube-apiserver: a continue token whose revision was compacted away
// gets 410 with a token that resumes after the same key from the latest
// state (an inconsistent list, which shows what was written since), and
// pages count the items after them.
func TestContinueAfterCompactionIsInconsistent(t *testing.T) {
	forEachReader(t, func(t *testing.T, configure func(*Config)) {
		s := newTestServerWith(t, configure)
		ctx := testContext(t)
		cms := s.client.CoreV1().ConfigMaps("default")
		for i := 0; i < 6; i++ {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		first, err := cms.List(ctx, metav1.ListOptions{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if first.RemainingItemCount == nil || *first.RemainingItemCount != 4 || first.Continue == "" {
			t.Fatalf("first page: remainingItemCount %v, continue %q; want 4 and a token", first.RemainingItemCount, first.Continue)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-late"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		runCompactor(t, s.store)
		var token string
		wait.UntilNil(t, time.Minute, "the first page's token to expire after compaction", func() error {
			_, err := cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: first.Continue})
			status, ok := err.(apierrors.APIStatus)
			if !ok || !apierrors.IsResourceExpired(err) {
				return fmt.Errorf("continue: %v", err)
			}
			if token = status.Status().ListMeta.Continue; token == "" {
				t.Fatalf("410 without an inconsistent continue token: %v", err)
			}
			return nil
		})
		rest, err := cms.List(ctx, metav1.ListOptions{Limit: 10, Continue: token})
		if err != nil {
			t.Fatalf("inconsistent continue: %v", err)
		}
		var names []string
		for _, cm := range rest.Items {
			names = append(names, cm.Name)
		}
		if fmt.Sprint(names) != "[cm-2 cm-3 cm-4 cm-5 cm-late]" || rest.ResourceVersion == first.ResourceVersion {
			t.Fatalf("inconsistent page %v at %s, want cm-2..cm-5 and cm-late after %s", names, rest.ResourceVersion, first.ResourceVersion)
		}
	})
}

// runCompactor runs st's compactor, quickly, until the test ends.
func runCompactor(t *testing.T, st store.Interface) {
	t.Helper()
	c, ok := st.(interface {
		RunCompactor(context.Context, time.Duration) error
	})
	if !ok {
		t.Fatalf("store %T runs no compactor", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.RunCompactor(ctx, 100*time.Millisecond); err != nil {
			t.Errorf("compactor: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}
