package image

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// layeredImage has a base layer and a top layer that deletes, replaces and
// hides parts of it in every way OCI layers can.
func layeredImage() (base, top []entry) {
	base = []entry{
		dir("a"), file("a/deleted", "old"), file("a/kept", "kept"),
		dir("gone"), file("gone/x", "x"),
		dir("opaque"), file("opaque/old", "old"),
		dir("replaced"), file("replaced/old", "old"),
		file("shared", "data"),
	}
	top = []entry{
		whiteout("a/deleted"),
		whiteout("gone"),
		opaque("opaque"), file("opaque/new", "new"),
		// Deleted and recreated as a directory in the same layer: must not
		// show the old contents.
		whiteout("replaced"), dir("replaced"), file("replaced/new", "new"),
		// A hard link points at an earlier entry of its own layer.
		file("top-file", "top"), hardlink("top-link", "top-file"),
		symlink("abs-link", "/etc/passwd"), symlink("rel-link", "../../outside"),
		entry{name: "dev-null", typ: tar.TypeChar, mode: 0o666, major: 1, minor: 3},
		entry{name: "fifo", typ: tar.TypeFifo, mode: 0o600},
		entry{name: "setuid", typ: tar.TypeReg, mode: 0o4755, body: "#!", uid: 0, gid: 0},
		entry{name: "owned", typ: tar.TypeReg, mode: 0o640, body: "o", uid: 1000, gid: 2000},
		entry{name: "xattr", typ: tar.TypeReg, mode: 0o644, body: "x", xattrs: map[string]string{"user.berth": "yes"}},
	}
	return base, top
}

// pulledLayeredImage is a store, on a host that can mount overlays, holding
// layeredImage, whose ID it returns.
func pulledLayeredImage(t *testing.T) (*Service, string) {
	t.Helper()
	hostcheck.Require(t, hostcheck.Root, hostcheck.Overlayfs)
	reg := startRegistry(t, nil)
	base, top := layeredImage()
	reg.push(t, "test/layers:1", testImage(t, "", layer(t, base...), layer(t, top...)))
	s := newTestService(t, t.TempDir(), nil)
	return s, pull(t, s, reg.host+"/test/layers:1")
}

func TestOverlayRootfsHonoursWhiteoutsAndMetadata(t *testing.T) {
	s, id := pulledLayeredImage(t)
	ctx := context.Background()

	rootfs, err := s.PrepareRootfs(ctx, id, "c1", RootfsOptions{})
	if err != nil {
		t.Fatalf("PrepareRootfs: %v", err)
	}
	t.Cleanup(func() { s.RemoveRootfs(ctx, "c1") })

	for _, p := range []string{"a/deleted", "gone", "opaque/old", "replaced/old"} {
		if _, err := os.Lstat(filepath.Join(rootfs, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s should be hidden by the top layer, Lstat: %v", p, err)
		}
	}
	for p, want := range map[string]string{"a/kept": "kept", "opaque/new": "new", "replaced/new": "new", "shared": "data", "top-link": "top"} {
		got, err := os.ReadFile(filepath.Join(rootfs, p))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
	var a, b unix.Stat_t
	if err := unix.Lstat(filepath.Join(rootfs, "top-file"), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lstat(filepath.Join(rootfs, "top-link"), &b); err != nil {
		t.Fatal(err)
	}
	if a.Ino != b.Ino || a.Nlink != 2 {
		t.Errorf("hard link: inodes %d/%d nlink %d, want one inode with 2 links", a.Ino, b.Ino, a.Nlink)
	}
	for link, want := range map[string]string{"abs-link": "/etc/passwd", "rel-link": "../../outside"} {
		if got, err := os.Readlink(filepath.Join(rootfs, link)); err != nil || got != want {
			t.Errorf("symlink %s -> %q, %v; want %q", link, got, err, want)
		}
	}
	var dev unix.Stat_t
	if err := unix.Lstat(filepath.Join(rootfs, "dev-null"), &dev); err != nil || dev.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(dev.Rdev) != 1 || unix.Minor(dev.Rdev) != 3 {
		t.Errorf("dev-null: mode %o rdev %d:%d err %v, want char 1:3", dev.Mode, unix.Major(dev.Rdev), unix.Minor(dev.Rdev), err)
	}
	if fi, err := os.Lstat(filepath.Join(rootfs, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("fifo: %v %v", fi, err)
	}
	if fi, err := os.Lstat(filepath.Join(rootfs, "setuid")); err != nil || fi.Mode()&os.ModeSetuid == 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("setuid file mode %v, %v; want setuid 0755", fi.Mode(), err)
	}
	fi, err := os.Lstat(filepath.Join(rootfs, "owned"))
	if st := fi.Sys().(*syscall.Stat_t); err != nil || st.Uid != 1000 || st.Gid != 2000 || fi.Mode().Perm() != 0o640 {
		t.Errorf("owned: uid %d gid %d mode %v, want 1000 2000 0640", st.Uid, st.Gid, fi.Mode())
	}
	buf := make([]byte, 16)
	if n, err := unix.Lgetxattr(filepath.Join(rootfs, "xattr"), "user.berth", buf); err != nil || string(buf[:n]) != "yes" {
		t.Errorf("xattr user.berth = %q, %v; want yes", buf[:n], err)
	}

	// Writes go to the container's upper dir, never to the shared layers.
	if err := os.WriteFile(filepath.Join(rootfs, "shared"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := s.PrepareRootfs(ctx, id, "c2", RootfsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.RemoveRootfs(ctx, "c2") })
	if got, _ := os.ReadFile(filepath.Join(other, "shared")); string(got) != "data" {
		t.Fatalf("second container sees %q: a write leaked into the shared layer", got)
	}
}

func TestReadOnlyRootfs(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Overlayfs)
	reg := startRegistry(t, nil)
	reg.push(t, "test/ro:1", simpleImage(t, "ro"))
	s := newTestService(t, t.TempDir(), nil)
	id := pull(t, s, reg.host+"/test/ro:1")
	ctx := context.Background()
	rootfs, err := s.PrepareRootfs(ctx, id, "ro", RootfsOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.RemoveRootfs(ctx, "ro") })
	if got, err := os.ReadFile(filepath.Join(rootfs, "etc/marker")); err != nil || string(got) != "ro" {
		t.Fatalf("read from read-only rootfs: %q %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "new"), nil, 0o644); !errors.Is(err, unix.EROFS) {
		t.Fatalf("write to read-only rootfs: %v, want EROFS", err)
	}
}

func TestRemoveImageRefusedWhileInUse(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Overlayfs)
	reg := startRegistry(t, nil)
	reg.push(t, "test/used:1", simpleImage(t, "used"))
	s := newTestService(t, t.TempDir(), nil)
	ref := reg.host + "/test/used:1"
	id := pull(t, s, ref)
	ctx := context.Background()
	index := statIndex(t, s)
	rootfs, err := s.PrepareRootfs(ctx, ref, "user1", RootfsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The use is in the container's own mount record: taking an image
	// rewrites no index (metadata.json is replaced on every write).
	if now := statIndex(t, s); !os.SameFile(now, index) || now.ModTime() != index.ModTime() {
		t.Error("PrepareRootfs rewrote metadata.json")
	}
	_, err = s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("RemoveImage of an image in use: %v, want FailedPrecondition", err)
	}
	if imageStatus(t, s, ref) == nil {
		t.Fatal("refused removal still removed the image")
	}
	if err := s.RemoveRootfs(ctx, "user1"); err != nil {
		t.Fatal(err)
	}
	if now := statIndex(t, s); !os.SameFile(now, index) {
		t.Error("RemoveRootfs rewrote metadata.json")
	}
	if _, err := os.Stat(rootfs); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("rootfs still there after RemoveRootfs: %v", err)
	}
	if err := s.RemoveRootfs(ctx, "user1"); err != nil {
		t.Fatalf("second RemoveRootfs: %v", err)
	}
	if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}}); err != nil {
		t.Fatalf("RemoveImage after release: %v", err)
	}
	if imageStatus(t, s, ref) != nil {
		t.Fatal("image still present after removal")
	}
}

func statIndex(t *testing.T, s *Service) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(filepath.Join(s.cfg.Root, "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func TestStoreAndRootfsSurviveRestart(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Overlayfs)
	reg := startRegistry(t, nil)
	reg.push(t, "test/restart:1", simpleImage(t, "restart"))
	root := t.TempDir()
	ref := reg.host + "/test/restart:1"
	ctx := context.Background()

	first := newTestService(t, root, nil)
	id := pull(t, first, ref)
	rootfs, err := first.PrepareRootfs(ctx, id, "survivor", RootfsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "written"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A reboot loses the mount but keeps the directories.
	if err := unix.Unmount(rootfs, 0); err != nil {
		t.Fatal(err)
	}

	second := newTestService(t, root, nil)
	if st := imageStatus(t, second, ref); st == nil || st.Id != id {
		t.Fatalf("restarted store does not know %s: %v", ref, st)
	}
	res, err := second.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mounted) != 1 || res.Mounted[0] != "survivor" || len(res.Failed) != 0 {
		t.Fatalf("Recover = %+v, want survivor mounted", res)
	}
	if len(res.Uses) != 1 || res.Uses["survivor"] != id {
		t.Fatalf("Recover uses = %v, want survivor using %s", res.Uses, id)
	}
	t.Cleanup(func() { second.RemoveRootfs(ctx, "survivor") })
	if got, err := os.ReadFile(filepath.Join(rootfs, "written")); err != nil || string(got) != "before" {
		t.Fatalf("container's own file after recovery: %q %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(rootfs, "etc/marker")); err != nil || string(got) != "restart" {
		t.Fatalf("image file after recovery: %q %v", got, err)
	}
	_, err = second.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("use of the image was not recovered from the mount record: RemoveImage = %v", err)
	}
}

func TestRecoverReportsBrokenRootfs(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Overlayfs)
	root := t.TempDir()
	s := newTestService(t, root, nil)
	// A container directory with no mount record (a crash mid-prepare).
	if err := os.MkdirAll(filepath.Join(root, "containers", "half", "merged"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := s.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mounted) != 0 || res.Failed["half"] == nil {
		t.Fatalf("Recover = %+v, want half reported as failed", res)
	}
	if err := s.RemoveRootfs(context.Background(), "half"); err != nil {
		t.Fatalf("RemoveRootfs of a broken rootfs: %v", err)
	}
}

func TestPrepareRootfsRejectsBadInput(t *testing.T) {
	s := newTestService(t, t.TempDir(), nil)
	ctx := context.Background()
	if _, err := s.PrepareRootfs(ctx, "example.com/none:1", "../escape", RootfsOptions{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("container ID ../escape: %v, want InvalidArgument", err)
	}
	if _, err := s.PrepareRootfs(ctx, "example.com/none:1", "c1", RootfsOptions{}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown image: %v, want NotFound", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.cfg.Root, "containers")); len(entries) != 0 {
		t.Fatalf("failed PrepareRootfs left %d container dirs", len(entries))
	}
}

func TestFailedPrepareRootfsLeavesNothing(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Overlayfs)
	reg := startRegistry(t, nil)
	img := simpleImage(t, "broken")
	reg.push(t, "test/broken:1", img)
	root := t.TempDir()
	s := newTestService(t, root, nil)
	id := pull(t, s, reg.host+"/test/broken:1")
	// Damage the layer so that the overlay mount itself fails.
	diffIDs := mustConfig(t, img).RootFS.DiffIDs
	snap := s.layers.path(chainIDs(diffIDs)[0])
	if err := os.RemoveAll(snap); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.PrepareRootfs(ctx, id, "doomed", RootfsOptions{}); status.Code(err) != codes.Internal {
		t.Fatalf("PrepareRootfs over a damaged layer: %v, want Internal", err)
	}
	if _, err := os.Stat(filepath.Join(root, "containers", "doomed")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("failed PrepareRootfs left its directory: %v", err)
	}
	if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}}); err != nil {
		t.Fatalf("image still counted as used after a failed PrepareRootfs: %v", err)
	}
}
