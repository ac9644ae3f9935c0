package image

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// TestSyncTreeOpensOnlyFilesAndDirectories: a layer holds FIFOs (opening
// one would block), dangling symlinks (never followed), hard links (synced
// once per inode) and files no mode bit lets anyone read; syncTree syncs the
// rest and returns.
func TestSyncTreeOpensOnlyFilesAndDirectories(t *testing.T) {
	root := t.TempDir()
	mustDo(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(root, "a", "b", "file"), []byte("data"), 0o644))
	mustDo(t, os.Link(filepath.Join(root, "a", "b", "file"), filepath.Join(root, "a", "link")))
	mustDo(t, os.WriteFile(filepath.Join(root, "a", "unreadable"), []byte("data"), 0o000))
	hostcheck.Require(t, hostcheck.Root) // as the runtime runs: root opens it anyway
	mustDo(t, os.Symlink("/nonexistent/target", filepath.Join(root, "a", "dangling")))
	mustDo(t, unix.Mkfifo(filepath.Join(root, "a", "fifo"), 0o600))
	if err := syncTree(context.Background(), root); err != nil {
		t.Fatal(err)
	}
}

func TestSyncTreeStopsWhenCanceled(t *testing.T) {
	root := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(root, "file"), []byte("data"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := syncTree(ctx, root); err == nil {
		t.Fatal("syncTree with a canceled context returned nil")
	}
}

func TestSyncTreeReportsAMissingRoot(t *testing.T) {
	if err := syncTree(context.Background(), filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("syncTree of a missing directory returned nil")
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAlreadySyncedCountsAnInodeOnce: of two names of one file, only the
// second is reported synced; a file with one name never is.
func TestAlreadySyncedCountsAnInodeOnce(t *testing.T) {
	root := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(root, "a"), []byte("data"), 0o644))
	mustDo(t, os.Link(filepath.Join(root, "a"), filepath.Join(root, "b")))
	mustDo(t, os.WriteFile(filepath.Join(root, "single"), []byte("data"), 0o644))
	entries, err := os.ReadDir(root) // sorted: a, b, single
	mustDo(t, err)
	linked := map[uint64]bool{}
	for i, want := range []bool{false, true, false} {
		got, err := alreadySynced(entries[i], linked)
		mustDo(t, err)
		if got != want {
			t.Errorf("alreadySynced(%s) = %v, want %v", entries[i].Name(), got, want)
		}
	}
	if len(linked) != 1 {
		t.Errorf("%d inodes recorded, want 1 (the linked file's)", len(linked))
	}
}
