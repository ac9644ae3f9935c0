package apiserver

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/store"
)

// storeWithoutProgress hides the store's progress requests, so a watch
// cache learns of revisions made under other prefixes only when something
// under its own prefix changes — as when etcd defers progress notifications
// while another watcher on the stream is behind.
type storeWithoutProgress struct{ store.Interface }

// TestConsistentListFallsBackToTheStore: a LIST without a resourceVersion
// must reflect every write acknowledged before it, even when the cache
// cannot prove itself that fresh; it is then served from the store.
func TestConsistentListFallsBackToTheStore(t *testing.T) {
	t.Parallel()
	ts := newTestServerWith(t, func(cfg *Config) { cfg.Store = storeWithoutProgress{cfg.Store} })
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	if _, err := ts.client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A later write under another prefix: the secrets cache sees no event for it.
	cm, err := ts.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := ts.client.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("consistent list: %v", err)
	}
	listRV, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
	writeRV, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	if listRV < writeRV {
		t.Fatalf("list at revision %d does not reflect the write acknowledged at %d", listRV, writeRV)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "s" {
		t.Fatalf("list = %+v, want the one secret", list.Items)
	}
}
