package idmap

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/usernstest"
)

// TestAttachShowsFilesThroughTheMappings: a clone of a directory and of a
// single file, idmapped through a namespace mapping 0..65535 onto
// 100000.., shows the host root's files as 100000's; Detach removes both.
func TestAttachShowsFilesThroughTheMappings(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", usernstest.Start(t, 100000, 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()

	src, dst := t.TempDir(), t.TempDir()
	file := filepath.Join(src, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirClone, fileClone := filepath.Join(dst, "dir"), filepath.Join(dst, "file")
	if err := Attach(src, dirClone, int(ns.Fd()), Options{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if err := Attach(file, fileClone, int(ns.Fd()), Options{ReadOnly: true}); err != nil {
		Detach(dirClone)
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dirClone, "f"), fileClone} {
		if uid, _ := usernstest.Owner(t, p); uid != 100000 {
			t.Errorf("%s is owned by %d, want 100000", p, uid)
		}
	}
	if err := os.WriteFile(fileClone, []byte("y"), 0o644); err == nil {
		t.Error("a read-only clone took a write")
	}
	Detach(dirClone, fileClone)
	for _, p := range []string{dirClone, fileClone} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there after Detach: %v", p, err)
		}
	}
	if uid, _ := usernstest.Owner(t, file); uid != 0 {
		t.Errorf("the source itself now shows owner %d", uid)
	}
}
