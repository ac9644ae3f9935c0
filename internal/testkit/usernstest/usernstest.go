// Package usernstest gives tests user namespaces to map IDs through, and
// reads files' host owners.
package usernstest

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// Start runs a process in a new user namespace that maps IDs 0..65535 onto
// hostID.. (and in the new namespaces of cloneflags' other types, which
// that user namespace owns) until the test ends, and returns its pid.
func Start(t testing.TB, hostID int, cloneflags uintptr) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: hostID, Size: 65536}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | cloneflags, UidMappings: m, GidMappings: m}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a process in a user namespace: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// Owner is the host user and group owning path (not following a symlink).
func Owner(t testing.TB, path string) (uid, gid uint32) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}
