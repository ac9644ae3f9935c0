package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth/berth/internal/testkit/usernstest"
)

// TestIDMappedRootfsBelongsToTheNamespacesRoot: with an owner and a user
// namespace, the image's files show (on the host) as owned by the
// namespace's IDs, the root of the overlay and the container's directory
// belong to the namespace's root, and the shared layers are untouched.
func TestIDMappedRootfsBelongsToTheNamespacesRoot(t *testing.T) {
	const hostID = 200000
	s, id := pulledLayeredImage(t)
	ctx := context.Background()

	opts := RootfsOptions{Owner: &Owner{UID: hostID, GID: hostID}, IDMapUserns: fmt.Sprintf("/proc/%d/ns/user", usernstest.Start(t, hostID, 0))}
	rootfs, err := s.PrepareRootfs(ctx, id, "c1", opts)
	if err != nil {
		t.Fatalf("PrepareRootfs: %v", err)
	}
	t.Cleanup(func() { s.RemoveRootfs(ctx, "c1") })
	for path, want := range map[string][2]uint32{
		"shared": {hostID, hostID}, "owned": {hostID + 1000, hostID + 2000}, // layer files, through the mapping
		".":  {hostID, hostID}, // the overlay's root
		"..": {0, 0},           // the container's directory: passable, not theirs
	} {
		if uid, gid := usernstest.Owner(t, filepath.Join(rootfs, path)); uid != want[0] || gid != want[1] {
			t.Errorf("%s is owned by %d:%d, want %d:%d", path, uid, gid, want[0], want[1])
		}
	}
	if fi, err := os.Stat(filepath.Dir(rootfs)); err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("container dir: %v, %v; want 0711", fi.Mode(), err)
	}
	// The layers themselves keep the image's own IDs.
	for _, l := range mustRecord(t, s, "c1").LowerDirs {
		if _, err := os.Lstat(filepath.Join(l, "shared")); err == nil {
			if uid, _ := usernstest.Owner(t, filepath.Join(l, "shared")); uid != 0 {
				t.Errorf("layer file owned by %d, want 0", uid)
			}
		}
	}
	// No idmapped layer mount stays attached beside the overlay.
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(rootfs), "lower", "*")); len(left) > 0 {
		t.Errorf("idmapped layer mounts left attached: %v", left)
	}

	// A user namespace that cannot be opened fails the mount and leaves
	// nothing behind.
	opts.IDMapUserns = filepath.Join(t.TempDir(), "no-such-ns")
	if _, err := s.PrepareRootfs(ctx, id, "c2", opts); err == nil {
		t.Fatal("PrepareRootfs with a missing user namespace succeeded")
	}
	if _, err := os.Stat(s.rootfs.containerDir("c2")); !os.IsNotExist(err) {
		t.Errorf("failed rootfs left its directory: %v", err)
	}
}

func mustRecord(t *testing.T, s *Service, id string) mountRecord {
	t.Helper()
	rec, err := s.rootfs.readRecord(id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
