package apiserver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// A store reader counts its resource's objects (and only them) for API
// priority and fairness; before the first count it knows none.
func TestStoreReaderCountsItsObjects(t *testing.T) {
	t.Parallel()
	st := etcdtest.New(t)
	ctx := context.Background()
	for _, key := range []string{"/registry/events/a/1", "/registry/events/b/2", "/registry/events/b/3", "/registry/eventsx/4"} {
		if _, err := st.Create(ctx, key, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	unstarted := &storeReader{spec: readerSpec{Store: st, Prefix: "/registry/events/"}}
	unstarted.count.Store(-1)
	if _, err := unstarted.ObjectStats(); !errors.Is(err, flowcontrolrequest.ObjectCountNotFoundErr) {
		t.Fatalf("stats before counting: %v, want ObjectCountNotFoundErr", err)
	}
	reader, err := newStoreReader(t.Context(), readerSpec{Store: st, Prefix: "/registry/events/", Resource: schema.GroupResource{Resource: "events"}})
	if err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, 30*time.Second, "the events counted", func(context.Context) error {
		stats, err := reader.(objectCounter).ObjectStats()
		if err != nil || stats.ObjectCount != 3 || stats.EstimatedAverageObjectSizeBytes != 0 {
			return fmt.Errorf("stats %+v, %v; want 3 objects, no size", stats, err)
		}
		return nil
	})
}
