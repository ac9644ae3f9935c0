package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// userns starts a process in a new user namespace mapping IDs 0..65535 onto
// hostID.. and returns the path of that namespace while the test runs.
func userns(t *testing.T, hostID int) string {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: hostID, Size: 65536}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: m, GidMappings: m}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a process in a user namespace: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid)
}

func owner(t *testing.T, path string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// TestIDMappedRootfsBelongsToTheNamespacesRoot: with an owner and a user
// namespace, the image's files show (on the host) as owned by the
// namespace's IDs, the root of the overlay and the container's directory
// belong to the namespace's root, and the shared layers are untouched.
func TestIDMappedRootfsBelongsToTheNamespacesRoot(t *testing.T) {
	const hostID = 200000
	s, id := pulledLayeredImage(t)
	ctx := context.Background()

	opts := RootfsOptions{Owner: &Owner{UID: hostID, GID: hostID}, IDMapUserns: userns(t, hostID)}
	rootfs, err := s.PrepareRootfs(ctx, id, "c1", opts)
	if err != nil {
		t.Fatalf("PrepareRootfs: %v", err)
	}
	t.Cleanup(func() { s.RemoveRootfs(ctx, "c1") })
	for path, want := range map[string][2]uint32{
		"shared": {hostID, hostID}, "owned": {hostID + 1000, hostID + 2000}, // layer files, through the mapping
		".": {hostID, hostID}, "..": {hostID, hostID}, // the overlay's root and the container's directory
	} {
		if uid, gid := owner(t, filepath.Join(rootfs, path)); uid != want[0] || gid != want[1] {
			t.Errorf("%s is owned by %d:%d, want %d:%d", path, uid, gid, want[0], want[1])
		}
	}
	if fi, err := os.Stat(filepath.Dir(rootfs)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("container dir: %v, %v; want 0700", fi.Mode(), err)
	}
	// The layers themselves keep the image's own IDs.
	for _, l := range mustRecord(t, s, "c1").LowerDirs {
		if _, err := os.Lstat(filepath.Join(l, "shared")); err == nil {
			if uid, _ := owner(t, filepath.Join(l, "shared")); uid != 0 {
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
