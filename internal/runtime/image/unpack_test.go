package image

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

func TestUnpackRefusesPathTraversal(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	cases := map[string][]entry{
		"dot-dot entry":            {file("../../escaped", "x")},
		"dot-dot inside the path":  {dir("a"), file("a/../../escaped", "x")},
		"write through a symlink":  {symlink("evil", "/OUTSIDE"), file("evil/escaped", "x")},
		"symlink to a parent":      {symlink("up", ".."), file("up/escaped", "x")},
		"hard link out of layer":   {hardlink("h", "../../escaped")},
		"hard link via a symlink":  {symlink("evil", "/OUTSIDE"), hardlink("h", "evil/escaped")},
		"whiteout through symlink": {symlink("evil", "/OUTSIDE"), whiteout("evil/escaped")},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			outside := filepath.Join(parent, "OUTSIDE")
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range entries {
				// Point absolute symlinks at this test's own outside dir.
				entries[i].linkname = strings.Replace(entries[i].linkname, "/OUTSIDE", outside, 1)
			}
			layerDir := filepath.Join(parent, "a", "b", "layer")
			if err := os.MkdirAll(layerDir, 0o755); err != nil {
				t.Fatal(err)
			}
			err := unpackLayer(layerDir, bytes.NewReader(tarBytes(t, entries...)), DefaultMaxLayerSize)
			if err == nil {
				t.Fatal("unpack succeeded, want refusal")
			}
			for _, p := range []string{filepath.Join(parent, "escaped"), filepath.Join(parent, "a", "escaped"), filepath.Join(outside, "escaped")} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s was written outside the layer", p)
				}
			}
		})
	}
}

func TestPullOfMaliciousLayerRecordsNothing(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	reg := startRegistry(t, nil)
	reg.push(t, "evil/app:1", testImage(t, "", layer(t, file("../../../escaped", "x"))))
	root := t.TempDir()
	s := newTestService(t, root, nil)
	_, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.host + "/evil/app:1"}})
	if err == nil || !strings.Contains(err.Error(), "escapes the layer") {
		t.Fatalf("pull of a traversing layer: %v", err)
	}
	if st := imageStatus(t, s, reg.host+"/evil/app:1"); st != nil {
		t.Fatalf("refused image was recorded: %v", st)
	}
	snaps, _ := os.ReadDir(filepath.Join(root, "snapshots"))
	if len(snaps) != 0 {
		t.Fatalf("refused layer left %d snapshot entries", len(snaps))
	}
}

func TestUnpackRejectsCorruptLayerContent(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	s := newTestService(t, t.TempDir(), nil)
	raw := tarBytes(t, file("f", "content"))
	_, err := s.layers.ensure(context.Background(), "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("a", 64), func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	})
	if err == nil || !strings.Contains(err.Error(), "diffID") {
		t.Fatalf("layer whose content does not match its diffID: %v", err)
	}
	if s.layers.exists("sha256:" + strings.Repeat("a", 64)) {
		t.Fatal("mismatching layer was kept as a snapshot")
	}
}
