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
