package network

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/berth/berth/internal/runtime/nspin"
)

// NewNetNS creates a network namespace and pins it on dir/name (see
// nspin), so it outlives every process in it: the pod's containers come and
// go, the runtime restarts.
func NewNetNS(dir, name string) (string, error) {
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("invalid network namespace name %q", name)
	}
	path := filepath.Join(dir, name)
	if err := nspin.Pin(map[nspin.Type]string{nspin.Net: path}, ""); err != nil {
		return "", err
	}
	return path, nil
}

// RemoveNetNS unmounts and deletes a namespace made by NewNetNS. A path that
// is already gone is not an error, so teardown can be retried.
func RemoveNetNS(path string) error { return nspin.Unpin(path) }

// IsNetNS reports whether path is a mounted namespace (false for a
// leftover plain file after a reboot, or nothing at all).
func IsNetNS(path string) bool { return nspin.IsPinned(path) }

// WithNetNS runs fn on an OS thread that has entered the namespace at path.
// Sockets fn opens stay in that namespace after it returns, which is how
// port-forward dials a pod's localhost.
func WithNetNS(path string, fn func() error) error {
	ns, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open network namespace: %w", err)
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w", path, err)
			return
		}
		fnErr := fn()
		// Only a thread that made it back home may be reused by Go; on
		// failure it stays locked and dies with the goroutine.
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		errc <- fnErr
	}()
	return <-errc
}
