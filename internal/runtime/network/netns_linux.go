package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// NewNetNS creates a network namespace and pins it by bind-mounting it on
// dir/name, so it outlives every process in it (the pod's containers come and
// go, the runtime restarts). Written by hand because the only library helper
// (containernetworking/plugins' testutils) is test code: it is one unshare and
// one bind mount from a throw-away OS thread.
func NewNetNS(dir, name string) (string, error) {
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("invalid network namespace name %q", name)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", fmt.Errorf("create netns dir: %w", err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", fmt.Errorf("create netns mount point: %w", err)
	}
	f.Close()

	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: after unshare its namespace differs
		// from the rest of the process, so Go must throw it away when this
		// goroutine ends rather than reuse it.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare network namespace: %w", err)
			return
		}
		src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(src, path, "none", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("bind-mount network namespace: %w", err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// RemoveNetNS unmounts and deletes a namespace made by NewNetNS. A path that
// is already gone is not an error, so teardown can be retried.
func RemoveNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove network namespace %s: %w", path, err)
	}
	return nil
}

// IsNetNS reports whether path is a mounted network namespace (false for a
// leftover plain file after a reboot, or nothing at all).
func IsNetNS(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

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
