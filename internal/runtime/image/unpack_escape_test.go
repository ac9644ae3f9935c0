package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// TestUnpackKeepsEveryEntryInsideTheLayer: whiteouts, opaque markers,
// files and hard links that would reach above the layer root, or through a
// symlink an earlier entry planted (pointing out of the layer or within
// it), are refused, and nothing outside the layer root changes: no new
// entry and no overlay xattr on any directory above it.
func TestUnpackKeepsEveryEntryInsideTheLayer(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	cases := map[string][]entry{
		"whiteout ../.wh.x":                {file("../.wh.x", "")},
		"whiteout a/../../.wh.x":           {dir("a"), file("a/../../.wh.x", "")},
		"whiteout of dot-dot (.wh...)":     {file(".wh...", "")},
		"whiteout of dot (.wh..)":          {file(".wh..", "")},
		"whiteout of nothing (.wh.)":       {file(".wh.", "")},
		"nested whiteout of dot-dot":       {dir("a"), file("a/.wh...", "")},
		"opaque ../.wh..wh..opq":           {file("../.wh..wh..opq", "")},
		"opaque through a symlink":         {symlink("evil", "/OUTSIDE"), opaque("evil")},
		"whiteout through a symlink":       {symlink("evil", "/OUTSIDE"), whiteout("evil/x")},
		"whiteout through symlink to ..":   {symlink("up", ".."), whiteout("up/x")},
		"write through a symlink":          {symlink("evil", "/OUTSIDE"), file("evil/escaped", "x")},
		"write through a nested symlink":   {dir("d"), symlink("d/evil", "/OUTSIDE"), file("d/evil/escaped", "x")},
		"write through an in-layer link":   {dir("real"), symlink("alias", "real"), file("alias/escaped", "x")},
		"directory through a symlink":      {symlink("evil", "/OUTSIDE"), dir("evil/escaped")},
		"hard link out of the layer":       {hardlink("h", "../../escaped")},
		"hard link a/../../x":              {dir("a"), hardlink("h", "a/../../escaped")},
		"hard link through a symlink":      {symlink("evil", "/OUTSIDE"), hardlink("h", "evil/escaped")},
		"hard link source through symlink": {symlink("evil", "/OUTSIDE"), hardlink("h", "evil/target")},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			outside := filepath.Join(parent, "OUTSIDE")
			mustMkdir(t, outside)
			if err := os.WriteFile(filepath.Join(outside, "target"), []byte("host file"), 0o600); err != nil {
				t.Fatal(err)
			}
			for i := range entries {
				// Point absolute symlinks at this test's own outside dir.
				entries[i].linkname = strings.Replace(entries[i].linkname, "/OUTSIDE", outside, 1)
			}
			layerDir := filepath.Join(parent, "a", "b", "layer")
			mustMkdir(t, layerDir)
			before := treeOutside(t, parent, layerDir)

			err := unpackLayer(layerDir, bytes.NewReader(tarBytes(t, entries...)), DefaultMaxLayerSize)
			if err == nil {
				t.Fatal("unpack succeeded, want refusal")
			}
			if after := treeOutside(t, parent, layerDir); !slices.Equal(before, after) {
				t.Fatalf("outside the layer changed:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// TestUnpackStillMakesWhiteoutsAndLinks: the resolution that refuses
// escapes still unpacks what layers legitimately hold.
func TestUnpackStillMakesWhiteoutsAndLinks(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	dir1 := t.TempDir()
	err := unpackLayer(dir1, bytes.NewReader(tarBytes(t,
		dir("etc"), file("etc/a", "a"), hardlink("etc/b", "etc/a"), symlink("etc/link", "/etc/a"),
		whiteout("etc/gone"), opaque("etc"), file("deep/er/f", "f"), whiteout("deep/er/old"),
		dir("etc"), // a directory entry again keeps what is in it
	)), DefaultMaxLayerSize)
	if err != nil {
		t.Fatal(err)
	}
	var a, b unix.Stat_t
	if unix.Lstat(filepath.Join(dir1, "etc/a"), &a) != nil || unix.Lstat(filepath.Join(dir1, "etc/b"), &b) != nil || a.Ino != b.Ino {
		t.Error("hard link not made")
	}
	for _, wh := range []string{"etc/gone", "deep/er/old"} {
		fi, err := os.Lstat(filepath.Join(dir1, wh))
		if err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("whiteout %s: %v %v", wh, fi, err)
		}
	}
	if v, err := lgetxattr(filepath.Join(dir1, "etc"), overlayOpaqueXattr); err != nil || v != "y" {
		t.Errorf("opaque marker: %q %v", v, err)
	}
	if target, err := os.Readlink(filepath.Join(dir1, "etc/link")); err != nil || target != "/etc/a" {
		t.Errorf("symlink: %q %v", target, err)
	}
}

// TestUnpackRefusesOversizeLayers: a layer over the limit fails, whether
// its stream is large (a well-compressed run of zeros) or small with a
// sparse file declaring a huge size, and writes no byte past the limit.
func TestUnpackRefusesOversizeLayers(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	const limit = 1 << 20
	cases := map[string][]byte{
		"stream over the limit":      tarBytes(t, file("zeros", string(make([]byte, 2*limit)))),
		"many files over the limit":  tarBytes(t, file("a", string(make([]byte, limit/2))), file("b", string(make([]byte, limit/2))), file("c", "x")),
		"sparse file over the limit": sparseTar(t, "hole", 1<<40),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			err := unpackLayer(dir, bytes.NewReader(raw), limit)
			if !errors.Is(err, errLayerTooLarge) || !strings.Contains(err.Error(), "--max-layer-size") {
				t.Fatalf("unpack = %v, want the size refusal", err)
			}
			used, _, err := diskUsage(dir)
			if err != nil {
				t.Fatal(err)
			}
			if used > limit+64<<10 {
				t.Fatalf("%d bytes written for a %d-byte limit", used, limit)
			}
		})
	}
	// Exactly at the limit is accepted.
	raw := tarBytes(t, file("f", "x"))
	if err := unpackLayer(t.TempDir(), bytes.NewReader(raw), int64(len(raw))); err != nil {
		t.Fatalf("layer of exactly the limit: %v", err)
	}
}

// TestPullOfOversizeLayerFailsAndLeavesNothing: through the CRI, the pull of
// a decompression bomb fails with the size error and leaves no image and
// no snapshot, finished or half-unpacked.
func TestPullOfOversizeLayerFailsAndLeavesNothing(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	reg := startRegistry(t, nil)
	reg.push(t, "bomb/app:1", testImage(t, "", layer(t, file("zeros", string(make([]byte, 4<<20))))))
	root := t.TempDir()
	s := newTestService(t, root, func(c *Config) { c.MaxLayerSize = 1 << 20 })
	_, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.host + "/bomb/app:1"}})
	if err == nil || !strings.Contains(err.Error(), "exceeds the maximum uncompressed size") {
		t.Fatalf("pull of an oversize layer: %v", err)
	}
	if st := imageStatus(t, s, reg.host+"/bomb/app:1"); st != nil {
		t.Fatalf("refused image was recorded: %v", st)
	}
	if snaps, _ := os.ReadDir(filepath.Join(root, "snapshots")); len(snaps) != 0 {
		t.Fatalf("refused layer left %d snapshot entries", len(snaps))
	}
	if _, err := New(context.Background(), Config{Root: t.TempDir(), MaxLayerSize: -1}); err == nil {
		t.Fatal("a negative maximum layer size was accepted")
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// treeOutside lists every path under top except below layer, each with its
// type, size and overlay xattr, to compare before and after an unpack.
func treeOutside(t *testing.T, top, layer string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == layer {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		opq, _ := lgetxattr(p, overlayOpaqueXattr)
		out = append(out, fmt.Sprintf("%s %v %d opaque=%q", p, fi.Mode(), fi.Size(), opq))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func lgetxattr(p, name string) (string, error) {
	buf := make([]byte, 64)
	n, err := unix.Lgetxattr(p, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// sparseTar is a tar holding one PAX 1.0 sparse file of realSize bytes that
// is all hole: a few hundred bytes that expand to realSize. archive/tar
// writes no sparse files, so the blocks are laid out here by hand.
func sparseTar(t *testing.T, name string, realSize int64) []byte {
	t.Helper()
	sparseMap := padBlock([]byte(fmt.Sprintf("1\n%d\n0\n", realSize)))
	records := paxRecord("GNU.sparse.major", "1") + paxRecord("GNU.sparse.minor", "0") +
		paxRecord("GNU.sparse.name", name) + paxRecord("GNU.sparse.realsize", fmt.Sprint(realSize))
	var out bytes.Buffer
	out.Write(ustarHeader("PaxHeaders/"+name, 'x', int64(len(records))))
	out.Write(padBlock([]byte(records)))
	out.Write(ustarHeader("GNUSparseFile.0/"+name, '0', int64(len(sparseMap))))
	out.Write(sparseMap)
	out.Write(make([]byte, 1024)) // end of archive
	return out.Bytes()
}

func paxRecord(key, value string) string {
	body := " " + key + "=" + value + "\n"
	n := len(body) + 1
	for len(fmt.Sprint(n))+len(body) != n {
		n = len(fmt.Sprint(n)) + len(body)
	}
	return fmt.Sprint(n) + body
}

func ustarHeader(name string, typ byte, size int64) []byte {
	h := make([]byte, 512)
	copy(h[0:100], name)
	copy(h[100:108], "0000644\x00")
	copy(h[108:116], "0000000\x00")
	copy(h[116:124], "0000000\x00")
	copy(h[124:136], fmt.Sprintf("%011o\x00", size))
	copy(h[136:148], fmt.Sprintf("%011o\x00", 1700000000))
	h[156] = typ
	copy(h[257:265], "ustar\x0000")
	copy(h[148:156], "        ")
	var sum int64
	for _, b := range h {
		sum += int64(b)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return h
}

func padBlock(b []byte) []byte {
	return append(b, make([]byte, (512-len(b)%512)%512)...)
}
