package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/store"
)

// failingCreates answers every Create of a ConfigMap with err, as a store
// under load or over its size limit does.
type failingCreates struct {
	store.Interface
	err error
}

func (f failingCreates) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if strings.HasPrefix(key, "/registry/configmaps/") {
		return 0, fmt.Errorf("store create: %w", f.err)
	}
	return f.Interface.Create(ctx, key, value)
}

// TestStoreRefusalsKeepTheirMeaning: a store shedding load is 429 with
// Retry-After (client-go waits and retries), and a value over the store's
// size limit is 413 — not 500.
func TestStoreRefusalsKeepTheirMeaning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code int32
	}{
		{store.ErrTooManyRequests, http.StatusTooManyRequests},
		{store.ErrTooLarge, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			ts := newTestServerWith(t, func(cfg *Config) { cfg.Store = failingCreates{cfg.Store, tc.err} })
			_, err := ts.jsonCli.CoreV1().ConfigMaps("default").Create(context.Background(),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
			status, ok := err.(apierrors.APIStatus)
			if !ok || status.Status().Code != tc.code {
				t.Fatalf("create = %v, want a %d Status", err, tc.code)
			}
			if tc.code == http.StatusTooManyRequests {
				if d := status.Status().Details; d == nil || d.RetryAfterSeconds < 1 {
					t.Errorf("429 without a retry delay: %+v", status.Status().Details)
				}
			}
		})
	}
}
