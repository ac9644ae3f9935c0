package etcdtest_test

import (
	"context"
	"testing"

	"github.com/berth/berth/internal/testkit/etcdtest"
)

// TestReopenedDirKeepsData starts a member, stops it (as t.Cleanup would),
// and reopens the same directory.
func TestReopenedDirKeepsData(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var rev int64
	t.Run("write", func(t *testing.T) {
		s := etcdtest.NewInDir(t, dir)
		var err error
		if rev, err = s.Create(ctx, "/registry/x", []byte("kept")); err != nil {
			t.Fatal(err)
		}
	}) // the subtest's cleanup closed the member
	s := etcdtest.NewInDir(t, dir)
	kv, err := s.Get(ctx, "/registry/x")
	if err != nil || string(kv.Value) != "kept" || kv.ModRevision != rev {
		t.Fatalf("after reopen: %+v %v", kv, err)
	}
}
