package etcd_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

// BenchmarkEmbeddedCreate is one durable (fsynced) guarded create through
// the in-process client.
func BenchmarkEmbeddedCreate(b *testing.B) {
	s := etcdtest.New(b)
	value := make([]byte, 1024)
	i := 0
	for b.Loop() {
		if _, err := s.Create(context.Background(), fmt.Sprintf("/registry/bench/%09d", i), value); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEmbeddedGet is one linearizable read through the in-process client.
func BenchmarkEmbeddedGet(b *testing.B) {
	s := etcdtest.New(b)
	if _, err := s.Create(context.Background(), "/registry/bench/k", make([]byte, 1024)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Get(context.Background(), "/registry/bench/k"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEmbeddedBindTxn is a binding-shaped transaction: a guarded pod
// update plus a guarded per-node key, in one revision.
func BenchmarkEmbeddedBindTxn(b *testing.B) {
	ctx := context.Background()
	s := etcdtest.New(b)
	podRev, err := s.Create(ctx, "/registry/pods/ns/p", []byte("pod"))
	if err != nil {
		b.Fatal(err)
	}
	nodeRev, err := s.Create(ctx, "/registry/berth/nodebindings/n1", []byte("0"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rev, err := s.Txn(ctx, []store.Op{
			{Key: "/registry/pods/ns/p", ExpectModRevision: podRev, Value: []byte("pod bound")},
			{Key: "/registry/berth/nodebindings/n1", ExpectModRevision: nodeRev, Value: []byte("1")},
		})
		if err != nil {
			b.Fatal(err)
		}
		podRev, nodeRev = rev, rev
	}
}
