package oci

import (
	"os"

	"golang.org/x/sys/unix"
)

// reapOnExit reaps p, a child of this process, once it has exited, without
// holding an OS thread meanwhile. Process.Wait alone would block one in
// waitid for the child's whole life, and a monitor lives as long as its
// container: with a hundred containers, a hundred idle threads, each with
// its stacks resident. A pidfd becomes readable when its process exits, so
// the Go netpoller waits for that at no cost; Wait then returns at once.
// p stays usable meanwhile (Kill).
func reapOnExit(p *os.Process) {
	fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		// No pidfds (Linux < 5.10): a thread it is.
		go func() { _, _ = p.Wait() }()
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	go func() {
		defer func() { _, _ = p.Wait() }()
		defer f.Close()
		rc, err := f.SyscallConn()
		if err != nil {
			return
		}
		// Read calls back once at first and then whenever the pidfd is
		// readable; a zero-timeout poll says whether the child has exited.
		_ = rc.Read(func(fd uintptr) bool {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return err != nil || n > 0
		})
	}()
}
