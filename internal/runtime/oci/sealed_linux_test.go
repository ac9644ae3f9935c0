package oci

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSealedCopyIsTheBinaryAndCannotChange(t *testing.T) {
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) on this host")
	}
	f, err := SealedCopy(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	// runc skips its own protection only on exactly these seals.
	if seals != runcSeals {
		t.Errorf("seals = %#x, want %#x", seals, runcSeals)
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(ExecPath(f))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the copy differs from %s (%d bytes vs %d)", bin, len(got), len(want))
	}
	if _, err := f.WriteAt([]byte{0}, 0); err == nil {
		t.Error("wrote to the sealed copy")
	}
	// As a container would try it: through a path to the running binary.
	if rw, err := os.OpenFile(ExecPath(f), os.O_WRONLY, 0); err == nil {
		if _, err := rw.Write([]byte{0}); err == nil {
			t.Error("wrote to the sealed copy through its path")
		}
		rw.Close()
	}
	if out, err := exec.Command(ExecPath(f)).CombinedOutput(); err != nil {
		t.Errorf("run the sealed copy: %v: %s", err, out)
	}
}

func TestSealedCopyOfAMissingFileFails(t *testing.T) {
	if _, err := SealedCopy("/nonexistent/runc"); err == nil {
		t.Fatal("copied a file that does not exist")
	}
}
