package monitor

import (
	"os"
	"path/filepath"
	"testing"
)

// A symlink planted at the log's name after a rotation is not followed:
// the reopen fails and the file it points at is untouched.
func TestCRILogReopenRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	hostFile := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(hostFile, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.log")
	l, err := openCRILog(path, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostFile, path); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err == nil {
		t.Fatal("reopened the log through a symlink")
	}
	l.record("stdout", false, []byte("container output"))
	if data, err := os.ReadFile(hostFile); err != nil || string(data) != "host" {
		t.Errorf("host file now %q, %v", data, err)
	}
}
