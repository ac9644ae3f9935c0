package cri

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// TestMountsUnderFindsEscapedMountPointsAndUnmountUnderRemovesThem: a mount
// point with a space (\040 in mountinfo) is listed as its real path, and
// only paths below dir count.
func TestMountsUnderFindsEscapedMountPointsAndUnmountUnderRemovesThem(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	dir := t.TempDir()
	outer := filepath.Join(dir, "a b")
	inner := filepath.Join(outer, "inner")
	if err := os.Mkdir(outer, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", outer, "tmpfs", 0, ""); err != nil {
		t.Fatalf("mount %s: %v", outer, err)
	}
	t.Cleanup(func() { UnmountUnder(dir) })
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", inner, "tmpfs", 0, ""); err != nil {
		t.Fatalf("mount %s: %v", inner, err)
	}

	if got, want := MountsUnder(dir), []string{outer, inner}; !slices.Equal(got, want) {
		t.Errorf("MountsUnder(%s) = %q, want %q", dir, got, want)
	}
	if got := MountsUnder(filepath.Join(dir, "a")); len(got) != 0 {
		t.Errorf("MountsUnder(%s/a) = %q, want none (a sibling's prefix is not its parent)", dir, got)
	}
	UnmountUnder(dir)
	if got := MountsUnder(dir); len(got) != 0 {
		t.Errorf("after UnmountUnder: %q still mounted", got)
	}
}
