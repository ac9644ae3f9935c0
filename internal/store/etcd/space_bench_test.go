package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkDefragment100kKeys is one defragmentation of an embedded member
// holding 100k small keys (pod-sized values of 1 KiB) after another 100k
// were deleted and compacted away: the time the member's reads and writes
// wait while the space keeper reclaims a mass deletion. Run with
// -benchtime=3x; the figure goes in docs/operations.md.
func BenchmarkDefragment100kKeys(b *testing.B) {
	ctx := context.Background()
	s, err := Embedded(ctx, b.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	value := string(make([]byte, 1024))
	const keys, batch = 200_000, 100 // etcd's default limit is 128 ops a txn
	for i := 0; i < keys; i += batch {
		ops := make([]clientv3.Op, 0, batch)
		for j := i; j < i+batch; j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/registry/pods/bench/p-%07d", j), value))
		}
		if _, err := s.client.Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < keys; i += 2 * batch { // delete every other batch: half the keys
		if _, err := s.client.Delete(ctx, fmt.Sprintf("/registry/pods/bench/p-%07d", i), clientv3.WithRange(fmt.Sprintf("/registry/pods/bench/p-%07d", i+batch))); err != nil {
			b.Fatal(err)
		}
	}
	rev, err := s.CurrentRevision(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		b.Fatal(err)
	}
	before, err := s.client.Status(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	var after int64
	for b.Loop() {
		if after, err = s.defragment(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(before.DbSize)/(1<<20), "MiB-before")
	b.ReportMetric(float64(after)/(1<<20), "MiB-after")
}
