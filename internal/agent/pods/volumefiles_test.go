package pods

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

func TestVolumeFilesRefusePathsOutOfTheVolume(t *testing.T) {
	for _, bad := range []string{"../escape", "/etc/passwd", "a/../../escape", "..data/x", "..2026_01_01/x", "a/../b", ""} {
		t.Run(bad, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "vol")
			err := writeVolumeFiles(dir, filesWithMode(0o644, "ok", "fine", bad, "owned"), nil, nil)
			if err == nil || !strings.Contains(err.Error(), "invalid path") {
				t.Fatalf("path %q: got %v, want an invalid path error", bad, err)
			}
			if got := ls(t, parent); got != "vol" {
				t.Errorf("files appeared beside the volume: %s", got)
			}
			if got := ls(t, dir); got != "" {
				t.Errorf("a refused payload was partly written: %s", got)
			}
		})
	}
}

func TestVolumeFilesAreReplacedAsOneVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	if err := writeVolumeFiles(dir, filesWithMode(0o600, "a", "1", "sub/b", "1"), nil, nil); err != nil {
		t.Fatal(err)
	}
	first, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "a"), "1", 0o600)
	assertFile(t, filepath.Join(dir, "sub/b"), "1", 0o600)

	if err := writeVolumeFiles(dir, filesWithMode(0o644, "sub/b", "2", "c", "2"), nil, nil); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "sub/b"), "2", 0o644)
	assertFile(t, filepath.Join(dir, "c"), "2", 0o644)
	if _, err := os.Lstat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("removed key still visible: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("previous version %s kept: %v", first, err)
	}
}

// A volume written in place by an older agent is taken over, not left stale.
func TestVolumeFilesReplaceTheFlatLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", "sub/b", "gone"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeVolumeFiles(dir, filesWithMode(0o644, "a", "new", "sub/b", "new"), nil, nil); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "a"), "new", 0o644)
	assertFile(t, filepath.Join(dir, "sub/b"), "new", 0o644)
	if _, err := os.Lstat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
		t.Errorf("file of the old layout kept: %v", err)
	}
}

func assertFile(t *testing.T, path, want string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || string(data) != want {
		t.Errorf("%s = %q, %v; want %q", path, data, err, want)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != mode {
		t.Errorf("%s mode %v, %v; want %v", path, st.Mode(), err, mode)
	}
}

// filesWithMode is a payload of path, content pairs, every file of mode.
func filesWithMode(mode int32, pathContent ...string) payload {
	p := payload{}
	for i := 0; i+1 < len(pathContent); i += 2 {
		p[pathContent[i]] = volumeutil.FileProjection{Data: []byte(pathContent[i+1]), Mode: mode}
	}
	return p
}
