// Package etcdtest gives tests a real etcd: an embedded member in a temporary
// directory, reached in-process, stopped when the test ends.
package etcdtest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/berth/berth/internal/store/etcd"
)

// New starts an embedded etcd member in t.TempDir() and closes it with
// t.Cleanup. The returned store also implements store.ProgressRequester.
func New(t testing.TB) *etcd.Store {
	t.Helper()
	return NewInDir(t, t.TempDir())
}

// NewInDir is New with a chosen data directory, for tests that reopen it.
func NewInDir(t testing.TB, dir string) *etcd.Store {
	t.Helper()
	s, err := etcd.Embedded(context.Background(), dir, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatalf("etcdtest: start embedded etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("etcdtest: close embedded etcd: %v", err)
		}
	})
	return s
}

// testWriter sends etcd's warnings to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
