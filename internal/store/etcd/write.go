package etcd

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berth/berth/internal/store"
)

// Create writes key only if it does not exist.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if key == "" {
		return 0, errors.New("store create: empty key")
	}
	return s.create(ctx, key, value)
}

// create puts key, with opts, if it does not exist.
func (s *Store) create(ctx context.Context, key string, value []byte, opts ...clientv3.OpOption) (int64, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value), opts...)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("store create %q: %w", key, mapErr(err))
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("store create %q: %w", key, store.ErrAlreadyExists)
	}
	return resp.Header.Revision, nil
}

// Update writes key only if its ModRevision still equals expected.
func (s *Store) Update(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	if key == "" || expected <= 0 {
		return 0, fmt.Errorf("store update %q: needs a key and a positive expected revision, got %d", key, expected)
	}
	return s.guarded(ctx, "update", key, clientv3.Compare(clientv3.ModRevision(key), "=", expected), clientv3.OpPut(key, string(value)))
}

// Delete removes key only if its ModRevision equals expected (0 = any).
func (s *Store) Delete(ctx context.Context, key string, expected int64) (int64, error) {
	if key == "" || expected < 0 {
		return 0, fmt.Errorf("store delete %q: needs a key and a revision >= 0, got %d", key, expected)
	}
	guard := clientv3.Compare(clientv3.ModRevision(key), "=", expected)
	if expected == 0 {
		guard = clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	}
	return s.guarded(ctx, "delete", key, guard, clientv3.OpDelete(key))
}

// guarded runs op if guard holds; otherwise it reads key back to tell a
// missing key (ErrNotFound) from a changed one (ErrConflict) in the same round trip.
func (s *Store) guarded(ctx context.Context, verb, key string, guard clientv3.Cmp, op clientv3.Op) (int64, error) {
	resp, err := s.client.Txn(ctx).If(guard).Then(op).Else(clientv3.OpGet(key, clientv3.WithCountOnly())).Commit()
	if err != nil {
		return 0, fmt.Errorf("store %s %q: %w", verb, key, mapErr(err))
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return 0, fmt.Errorf("store %s %q: %w", verb, key, store.ErrNotFound)
	}
	return 0, fmt.Errorf("store %s %q: %w", verb, key, store.ErrConflict)
}

// Txn applies ops atomically, each guarded by its ExpectModRevision.
func (s *Store) Txn(ctx context.Context, ops []store.Op) (int64, error) {
	if len(ops) == 0 {
		return 0, errors.New("store txn: no operations")
	}
	guards := make([]clientv3.Cmp, 0, len(ops))
	writes := make([]clientv3.Op, 0, len(ops))
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if op.Key == "" || op.ExpectModRevision < 0 {
			return 0, fmt.Errorf("store txn: invalid op on key %q (expected revision %d)", op.Key, op.ExpectModRevision)
		}
		if seen[op.Key] {
			return 0, fmt.Errorf("store txn: key %q appears twice", op.Key)
		}
		seen[op.Key] = true
		guards = append(guards, expectGuard(op))
		switch {
		case op.CheckOnly:
		case op.Value == nil:
			writes = append(writes, clientv3.OpDelete(op.Key))
		default:
			writes = append(writes, clientv3.OpPut(op.Key, string(op.Value)))
		}
	}
	resp, err := s.client.Txn(ctx).If(guards...).Then(writes...).Commit()
	if err != nil {
		return 0, fmt.Errorf("store txn of %d ops: %w", len(ops), mapErr(err))
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("store txn of %d ops: %w", len(ops), store.ErrConflict)
	}
	return resp.Header.Revision, nil
}

// expectGuard is the comparison an op's ExpectModRevision stands for.
func expectGuard(op store.Op) clientv3.Cmp {
	if op.ExpectModRevision == 0 {
		return clientv3.Compare(clientv3.CreateRevision(op.Key), "=", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(op.Key), "=", op.ExpectModRevision)
}
