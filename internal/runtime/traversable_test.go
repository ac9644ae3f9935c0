package runtime

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMakeTraversableOnlyAddsSearch: a new directory is 0711, a private
// one gains the search bits only, and a more open one is left as it is.
func TestMakeTraversableOnlyAddsSearch(t *testing.T) {
	base := t.TempDir()
	fresh, private, open := filepath.Join(base, "a", "fresh"), filepath.Join(base, "private"), filepath.Join(base, "open")
	for dir, mode := range map[string]os.FileMode{private: 0o700, open: 0o755} {
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := makeTraversable(fresh, private, open); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]os.FileMode{fresh: 0o711, private: 0o711, open: 0o755} {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", dir, fi.Mode().Perm(), err, want)
		}
	}
}
