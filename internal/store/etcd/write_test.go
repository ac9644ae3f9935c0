package etcd_test

import (
	"context"
	"errors"
	"testing"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

func TestCreateIfAbsent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	rev, err := s.Create(ctx, "/registry/pods/ns/a", []byte("one"))
	if err != nil {
		t.Fatalf("first create: %v", err)
	}
	if _, err := s.Create(ctx, "/registry/pods/ns/a", []byte("two")); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("second create: got %v, want ErrAlreadyExists", err)
	}
	kv, err := s.Get(ctx, "/registry/pods/ns/a")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if string(kv.Value) != "one" || kv.ModRevision != rev {
		t.Fatalf("get = %q@%d, want %q@%d (the failed create must change nothing)", kv.Value, kv.ModRevision, "one", rev)
	}
}

func TestUpdateCompareAndSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	key := "/registry/pods/ns/a"
	rev1, err := s.Create(ctx, key, []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	rev2, err := s.Update(ctx, key, rev1, []byte("v2"))
	if err != nil {
		t.Fatalf("update at current revision: %v", err)
	}
	if rev2 <= rev1 {
		t.Fatalf("update revision %d not after create revision %d", rev2, rev1)
	}
	if _, err := s.Update(ctx, key, rev1, []byte("stale")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("update at stale revision: got %v, want ErrConflict", err)
	}
	if _, err := s.Update(ctx, "/registry/pods/ns/missing", rev1, []byte("x")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of missing key: got %v, want ErrNotFound", err)
	}
	if _, err := s.Update(ctx, "/registry/pods/ns/missing", 0, []byte("x")); err == nil {
		t.Fatal("update with expected revision 0 succeeded; it must be rejected, not turned into a create")
	}
	if _, err := s.Get(ctx, "/registry/pods/ns/missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rejected updates created the key: %v", err)
	}
	kv, err := s.Get(ctx, key)
	if err != nil || string(kv.Value) != "v2" || kv.ModRevision != rev2 {
		t.Fatalf("get = %q@%d (%v), want v2@%d", kv.Value, kv.ModRevision, err, rev2)
	}
}

func TestDeleteCompareAndSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	key := "/registry/pods/ns/a"
	rev, err := s.Create(ctx, key, []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, key, rev+100); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("delete at wrong revision: got %v, want ErrConflict", err)
	}
	delRev, err := s.Delete(ctx, key, rev)
	if err != nil {
		t.Fatalf("delete at current revision: %v", err)
	}
	if delRev <= rev {
		t.Fatalf("delete revision %d not after %d", delRev, rev)
	}
	if _, err := s.Delete(ctx, key, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete of deleted key: got %v, want ErrNotFound", err)
	}
	if _, err := s.Create(ctx, key, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, key, 0); err != nil {
		t.Fatalf("unconditional delete: %v", err)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: got %v, want ErrNotFound", err)
	}
}

func TestTxnAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	podRev, err := s.Create(ctx, "/registry/pods/ns/p", []byte("unbound"))
	if err != nil {
		t.Fatal(err)
	}
	nodeRev, err := s.Create(ctx, "/registry/nodes/n1", []byte("node"))
	if err != nil {
		t.Fatal(err)
	}

	// One stale guard: nothing may be written, not even the ops whose guards hold.
	_, err = s.Txn(ctx, []store.Op{
		{Key: "/registry/pods/ns/p", ExpectModRevision: podRev, Value: []byte("bound")},
		{Key: "/registry/nodes/n1", ExpectModRevision: nodeRev + 1, Value: []byte("node'")},
		{Key: "/registry/leases/n1", ExpectModRevision: 0, Value: []byte("lease")},
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("txn with a stale guard: got %v, want ErrConflict", err)
	}
	assertValue(t, s, "/registry/pods/ns/p", "unbound")
	assertValue(t, s, "/registry/nodes/n1", "node")
	if _, err := s.Get(ctx, "/registry/leases/n1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("failed txn created a key: %v", err)
	}

	rev, err := s.Txn(ctx, []store.Op{
		{Key: "/registry/pods/ns/p", ExpectModRevision: podRev, Value: []byte("bound")},
		{Key: "/registry/nodes/n1", ExpectModRevision: nodeRev, Value: nil},
		{Key: "/registry/leases/n1", ExpectModRevision: 0, Value: []byte("lease")},
	})
	if err != nil {
		t.Fatalf("txn with valid guards: %v", err)
	}
	assertValue(t, s, "/registry/pods/ns/p", "bound")
	assertValue(t, s, "/registry/leases/n1", "lease")
	if _, err := s.Get(ctx, "/registry/nodes/n1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("txn delete op left the key: %v", err)
	}
	kv, _ := s.Get(ctx, "/registry/leases/n1")
	if kv.ModRevision != rev {
		t.Fatalf("txn keys written at %d, txn returned %d", kv.ModRevision, rev)
	}
}

func TestTxnRejectsMalformedOps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	cases := map[string][]store.Op{
		"empty":         nil,
		"empty key":     {{Key: "", Value: []byte("x")}},
		"negative rev":  {{Key: "/a", ExpectModRevision: -1, Value: []byte("x")}},
		"duplicate key": {{Key: "/a", Value: []byte("x")}, {Key: "/a", Value: []byte("y")}},
	}
	for name, ops := range cases {
		if _, err := s.Txn(ctx, ops); err == nil || errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: got %v, want a validation error", name, err)
		}
	}
	if _, err := s.Get(ctx, "/a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rejected txn wrote /a: %v", err)
	}
}

func assertValue(t *testing.T, s store.Interface, key, want string) {
	t.Helper()
	kv, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if string(kv.Value) != want {
		t.Fatalf("get %s = %q, want %q", key, kv.Value, want)
	}
}

func TestOversizedValueIsErrTooLargeAndWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	big := make([]byte, 2<<20) // etcd's request limit is 1.5 MiB
	if _, err := s.Create(ctx, "/registry/configmaps/ns/big", big); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("create of 2 MiB: got %v, want ErrTooLarge", err)
	}
	if _, err := s.Get(ctx, "/registry/configmaps/ns/big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("oversized create left a key: %v", err)
	}
}

func TestTxnCheckOnlyGuardsWithoutWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	nodeRev, err := s.Create(ctx, "/registry/nodes/n1", []byte("node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(ctx, []store.Op{
		{Key: "/registry/nodes/n1", ExpectModRevision: nodeRev, CheckOnly: true},
		{Key: "/registry/pods/ns/p", Value: []byte("bound")},
	}); err != nil {
		t.Fatalf("txn with a holding check: %v", err)
	}
	kv, err := s.Get(ctx, "/registry/nodes/n1")
	if err != nil || kv.ModRevision != nodeRev || string(kv.Value) != "node" {
		t.Fatalf("a check-only op wrote its key: %+v, %v", kv, err)
	}
	if _, err := s.Update(ctx, "/registry/nodes/n1", nodeRev, []byte("node'")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(ctx, []store.Op{
		{Key: "/registry/nodes/n1", ExpectModRevision: nodeRev, CheckOnly: true},
		{Key: "/registry/pods/ns/q", Value: []byte("bound")},
	}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("txn whose checked key moved: got %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx, "/registry/pods/ns/q"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("failed txn wrote: %v", err)
	}
}
