package oci

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// runcSeals are the seals runc looks for on its own executable (runc
// 1.1's is_self_cloned): with exactly these, no process can change the
// file, so runc need not protect itself against CVE-2019-5736 again.
const runcSeals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// SealedCopy copies the executable at path into a sealed memfd, which is
// then executed instead of the file. Each `runc init` otherwise protects
// the host's runc binary from the container (CVE-2019-5736) by
// bind-mounting itself read-only in the host's mount namespace, unmounting
// that, and executing itself a second time: a mount and an unmount in the
// host's mount table (which every mount watcher, systemd among them,
// rereads) and a second program start, for every container and every exec.
// One sealed copy gives the same protection once, as runc's own memfd-bind
// tool does, at the cost of one in-memory copy of the binary; it also pins
// the OCI runtime's version for the life of this process.
func SealedCopy(path string) (*os.File, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	name := filepath.Base(path)
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Kernels before 6.3 know no MFD_EXEC; their memfds are executable.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	copied := os.NewFile(uintptr(fd), "memfd:"+name)
	if _, err := io.Copy(copied, src); err != nil {
		copied.Close()
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	if _, err := unix.FcntlInt(copied.Fd(), unix.F_ADD_SEALS, runcSeals); err != nil {
		copied.Close()
		return nil, fmt.Errorf("seal the copy of %s: %w", path, err)
	}
	return copied, nil
}

// ExecPath is a path that executes f, for this process and the processes
// it starts (whose own descriptor tables differ from this one's while they
// set up their files, so /proc/self would not do).
func ExecPath(f *os.File) string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd())
}
