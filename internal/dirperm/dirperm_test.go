package dirperm

import (
	"os"
	"path/filepath"
	"testing"
)

func chmod(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// TestMakeTraversableOnlyAddsSearch: a new directory is 0711, a private
// one gains the search bits only, and a more open one is left as it is.
func TestMakeTraversableOnlyAddsSearch(t *testing.T) {
	base := t.TempDir()
	fresh, private, open := filepath.Join(base, "a", "fresh"), filepath.Join(base, "private"), filepath.Join(base, "open")
	for dir, mode := range map[string]os.FileMode{private: 0o700, open: 0o755} {
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		chmod(t, dir, mode)
	}
	if err := MakeTraversable(fresh, private, open); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]os.FileMode{fresh: 0o711, private: 0o711, open: 0o755} {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", dir, fi.Mode().Perm(), err, want)
		}
	}
}

// TestBlockingNamesTheFirstClosedDirectory: the highest directory others
// cannot pass, or none.
func TestBlockingNamesTheFirstClosedDirectory(t *testing.T) {
	base := t.TempDir()
	deep := filepath.Join(base, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{base, filepath.Dir(base)} {
		chmod(t, d, 0o711)
	}
	if got := Blocking(deep); got != "" {
		t.Errorf("open chain: Blocking = %q", got)
	}
	chmod(t, filepath.Join(base, "a", "b"), 0o700)
	chmod(t, filepath.Join(base, "a"), 0o750)
	if got := Blocking(deep); got != filepath.Join(base, "a") {
		t.Errorf("Blocking = %q, want %s", got, filepath.Join(base, "a"))
	}
}
