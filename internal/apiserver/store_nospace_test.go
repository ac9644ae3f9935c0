package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/store/etcd"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestFullStoreIsA500WithEtcdsMessageAndReadsGoOn: over a real embedded
// etcd filled to its (tiny) quota, a create answers as kube-apiserver does
// — 500, no reason, message "etcdserver: mvcc: database space exceeded" — while gets and
// lists still work (a list shows every object whose create succeeded, and
// the refused one only if etcd applied it before refusing), and deleting
// objects frees the store for writes again.
func TestFullStoreIsA500WithEtcdsMessageAndReadsGoOn(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	st, err := etcd.Embedded(context.Background(), t.TempDir(), log, etcd.WithQuotaBackendBytes(8<<20),
		etcd.WithSpacePolicy(etcd.SpacePolicy{Interval: 100 * time.Millisecond, MinReclaim: 64 << 20, Ratio: 2, DisarmBelow: 0.9}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts := newTestServerWith(t, func(cfg *Config) { cfg.Store = st })
	ctx := testContext(t)
	cms := ts.jsonCli.CoreV1().ConfigMaps("default")

	blob := strings.Repeat("x", 256<<10)
	var created []string
	var full error
	var refused string // the name whose create met the full store
	for i := 0; full == nil; i++ {
		if i > 200 {
			t.Fatal("the store never filled")
		}
		name := fmt.Sprintf("fill-%03d", i)
		_, full = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"b": blob}}, metav1.CreateOptions{})
		if full == nil {
			created = append(created, name)
		} else {
			refused = name
		}
	}
	var status apierrors.APIStatus
	if !errors.As(full, &status) || status.Status().Code != http.StatusInternalServerError ||
		status.Status().Message != "etcdserver: mvcc: database space exceeded" || status.Status().Reason != metav1.StatusReasonUnknown {
		t.Fatalf("create into a full store = %#v, want kube-apiserver's 500 Status with etcd's message", full)
	}
	if _, err := cms.Get(ctx, created[0], metav1.GetOptions{}); err != nil {
		t.Fatalf("get while full: %v", err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list while full: %v", err)
	}
	// etcd checks the quota twice: before proposing a write, and again
	// when applying it, where a write the first check let through is
	// applied and still answered with NOSPACE (etcdserver/apply/quota.go).
	// So the refused create may have been stored, as with kube-apiserver.
	got := strings.Join(itemNames(list.Items), ",")
	want, orWithRefused := strings.Join(created, ","), strings.Join(append(created[:len(created):len(created)], refused), ",")
	if got != want && got != orWithRefused {
		t.Fatalf("list while full at resourceVersion %s = [%s], want the %d created [%s], or those and %s (its create was refused after etcd applied it)",
			list.ResourceVersion, got, len(created), want, refused)
	}
	if got == orWithRefused {
		t.Logf("the create of %s was answered NOSPACE after etcd applied it", refused)
	}
	for _, name := range append(created, refused) {
		err := cms.Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !(name == refused && apierrors.IsNotFound(err)) {
			t.Fatalf("delete %s while full: %v", name, err)
		}
	}
	wait.UntilCtx(t, time.Minute, "writes to be accepted again after the objects were deleted", func(ctx context.Context) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
		return err
	})
}

func itemNames(cms []corev1.ConfigMap) []string {
	names := make([]string, len(cms))
	for i, cm := range cms {
		names[i] = cm.Name
	}
	return names
}
