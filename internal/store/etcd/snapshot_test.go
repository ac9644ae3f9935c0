package etcd_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/store/etcd"
)

// A snapshot taken from a running embedded member restores into a member
// that holds exactly what was written before the snapshot.
func TestSnapshotRestoresWhatWasWrittenBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "etcd")
	st, err := etcd.Embedded(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, "/registry/before", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(root, "backup.db")
	writeSnapshot(t, st, snap)
	if _, err := st.Create(ctx, "/registry/after", []byte("lost")); err != nil {
		t.Fatal(err)
	}

	if _, err := etcd.RestoreEmbedded(snap, dir, nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("restore under a running member: got %v, want an in-use error", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	info, err := etcd.VerifySnapshot(snap, nil)
	if err != nil || info.TotalKeys == 0 || info.Revision < 2 {
		t.Fatalf("VerifySnapshot = %+v, %v", info, err)
	}
	previous, err := etcd.RestoreEmbedded(snap, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(previous, "member")); err != nil {
		t.Fatalf("previous data not kept at %s: %v", previous, err)
	}

	st, err = etcd.Embedded(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	assertValue(t, st, "/registry/before", "kept")
	if _, err := st.Get(ctx, "/registry/after"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key written after the snapshot: got %v, want not found", err)
	}
	// The restored member takes writes.
	if _, err := st.Create(ctx, "/registry/next", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreRefusesACorruptSnapshot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bad := filepath.Join(root, "bad.db")
	if err := os.WriteFile(bad, []byte("not a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "etcd")
	if _, err := etcd.RestoreEmbedded(bad, dir, nil); err == nil {
		t.Fatal("restore of a corrupt snapshot succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused restore left %s behind: %v", dir, err)
	}
}

func writeSnapshot(t *testing.T, st *etcd.Store, path string) {
	t.Helper()
	rc, err := st.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
}
