package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// writers are the package's two ways to replace a file: the same
// contract, with and without waiting for the disk.
var writers = map[string]func(string, []byte, os.FileMode) error{"WriteFile": WriteFile, "Replace": Replace}

func TestWriteFileReplacesWithModeAndLeavesNoTemporaries(t *testing.T) {
	for name, write := range writers {
		t.Run(name, func(t *testing.T) { testReplacesWithModeAndLeavesNoTemporaries(t, write) })
	}
}

func testReplacesWithModeAndLeavesNoTemporaries(t *testing.T, write func(string, []byte, os.FileMode) error) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f")
	for _, content := range []string{"first", "second"} {
		if err := write(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file: %v", len(entries), entries)
	}
}

func TestWriteFileFailsOnUnwritableTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "isdir")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, write := range writers {
		if err := write(target, []byte("x"), 0o600); err == nil {
			t.Errorf("%s: replacing a non-empty directory succeeded; want an error", name)
		}
	}
}
