package nspin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Written by hand because no maintained Go library pins namespaces outside
// test code (containernetworking/plugins' testutils does it for netns only,
// CRI-O's pinns is C): it is one unshare and one bind mount per namespace
// from a throw-away OS thread.

func cloneFlag(t Type) uintptr {
	switch t {
	case Net:
		return unix.CLONE_NEWNET
	case UTS:
		return unix.CLONE_NEWUTS
	default:
		return unix.CLONE_NEWIPC
	}
}

// Pin creates one new namespace of each type in paths, together, and
// bind-mounts each onto its path (a new file; its directory is created).
// hostname, if not empty, is set inside the new UTS namespace; a new network
// namespace has its loopback interface up. On error
// nothing is left behind: no mount, no file.
func Pin(paths map[Type]string, hostname string) error {
	if len(paths) == 0 {
		return errors.New("nspin: no namespace to pin")
	}
	var flags uintptr
	var types []Type
	for t, p := range paths {
		if err := t.valid(); err != nil {
			return err
		}
		if !filepath.IsAbs(p) {
			return fmt.Errorf("nspin: %s namespace path %q is not absolute", t, p)
		}
		flags |= cloneFlag(t)
		types = append(types, t)
	}
	if hostname != "" && paths[UTS] == "" {
		return errors.New("nspin: a hostname needs a new UTS namespace")
	}
	created, err := createMountPoints(paths)
	if err != nil {
		return err
	}
	if err := onNewThread(types, func() error { return unshareAndMount(flags, paths, hostname) }); err != nil {
		for _, p := range created {
			_ = Unpin(p)
		}
		return err
	}
	return nil
}

// createMountPoints makes an empty file for each namespace; a path that
// already exists is an error, so a live namespace is never overmounted.
func createMountPoints(paths map[Type]string) ([]string, error) {
	var created []string
	for _, t := range allTypes() {
		p, ok := paths[t]
		if !ok {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o711); err != nil {
			removeFiles(created)
			return nil, fmt.Errorf("nspin: create %s namespace dir: %w", t, err)
		}
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			removeFiles(created)
			return nil, fmt.Errorf("nspin: create %s namespace mount point: %w", t, err)
		}
		f.Close()
		created = append(created, p)
	}
	return created, nil
}

func removeFiles(paths []string) {
	for _, p := range paths {
		_ = os.Remove(p)
	}
}

// onNewThread runs fn on its own locked OS thread that fn may move into
// new namespaces. The thread's namespaces are put back afterwards so Go can
// reuse it; if that fails it stays locked and Go discards it with the
// goroutine. Never leaving a changed thread to Go matters: a locked
// goroutine that ends on the process's main thread does not kill it but
// wedges it, and the whole process's /proc/self/ns would then show the
// pod's namespaces.
func onNewThread(types []Type, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restore, err := saveNamespaces(types)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		err = fn()
		// Back home before the caller learns the result, so no moment
		// exists in which a caller could see the process in fn's namespaces.
		if restore() == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// Enter runs fn on an OS thread that has joined the namespace of type t at
// path. What fn opens there (sockets) stays in that namespace after it
// returns, which is how port-forward dials a pod's localhost.
func Enter(path string, t Type, fn func() error) error {
	return EnterAll(map[Type]string{t: path}, fn)
}

// EnterAll runs fn on an OS thread that has joined the namespace at each
// path. A process fn starts there is born in those namespaces, which is how
// the monitor starts a pod's pause process in the pod's pinned ones.
func EnterAll(paths map[Type]string, fn func() error) error {
	for t := range paths {
		if err := t.valid(); err != nil {
			return err
		}
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	types := make([]Type, 0, len(paths))
	for _, t := range Types() {
		path, ok := paths[t]
		if !ok {
			continue
		}
		ns, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("nspin: open %s namespace: %w", t, err)
		}
		files = append(files, ns)
		types = append(types, t)
	}
	return onNewThread(types, func() error {
		for i, t := range types {
			if err := unix.Setns(int(files[i].Fd()), int(cloneFlag(t))); err != nil {
				return fmt.Errorf("nspin: enter %s namespace %s: %w", t, paths[t], err)
			}
		}
		return fn()
	})
}

// saveNamespaces opens the calling thread's namespaces of the given types
// and returns a function that moves the thread back into them.
func saveNamespaces(types []Type) (restore func() error, err error) {
	saved := make(map[Type]*os.File, len(types))
	closeAll := func() {
		for _, f := range saved {
			f.Close()
		}
	}
	for _, t := range types {
		f, err := os.Open("/proc/thread-self/ns/" + string(t))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("nspin: open own %s namespace: %w", t, err)
		}
		saved[t] = f
	}
	return func() error {
		defer closeAll()
		for t, f := range saved {
			if err := unix.Setns(int(f.Fd()), int(cloneFlag(t))); err != nil {
				return fmt.Errorf("nspin: return to own %s namespace: %w", t, err)
			}
		}
		return nil
	}, nil
}

func unshareAndMount(flags uintptr, paths map[Type]string, hostname string) error {
	if err := unix.Unshare(int(flags)); err != nil {
		return fmt.Errorf("nspin: unshare: %w", err)
	}
	if hostname != "" {
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			return fmt.Errorf("nspin: set hostname %q: %w", hostname, err)
		}
	}
	if flags&unix.CLONE_NEWNET != 0 {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	for _, t := range Types() {
		p, ok := paths[t]
		if !ok {
			continue
		}
		if err := unix.Mount("/proc/thread-self/ns/"+string(t), p, "none", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("nspin: bind-mount %s namespace on %s: %w", t, p, err)
		}
	}
	return nil
}

// loopbackUp brings up lo in the calling thread's network namespace, which
// gives it 127.0.0.1 and ::1. Every pod needs it, and doing it here, in the
// namespace's first moment, spares each pod an exec of the CNI loopback
// plugin on setup and on teardown (which only does this same ioctl).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("nspin: socket for lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("nspin: lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("nspin: read lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("nspin: bring lo up: %w", err)
	}
	return nil
}

// Unpin unmounts and deletes a namespace file made by Pin. A path that is
// not mounted or already gone is not an error, so teardown can be retried.
func Unpin(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("nspin: unmount namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("nspin: remove namespace %s: %w", path, err)
	}
	return nil
}

// IsPinned reports whether path is a mounted namespace (false for a
// leftover plain file after a reboot, or nothing at all).
func IsPinned(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

// PinProcess bind-mounts the namespaces of process pid onto paths (new
// files; their directory is created), User included: how a user-namespaced
// pod's namespaces, which its pause process was born in, are pinned. On
// error nothing is left behind.
func PinProcess(pid int, paths map[Type]string) error {
	for t, p := range paths {
		if t != User {
			if err := t.valid(); err != nil {
				return err
			}
		}
		if !filepath.IsAbs(p) {
			return fmt.Errorf("nspin: %s namespace path %q is not absolute", t, p)
		}
	}
	created, err := createMountPoints(paths)
	if err != nil {
		return err
	}
	for _, t := range allTypes() {
		p, ok := paths[t]
		if !ok {
			continue
		}
		src := fmt.Sprintf("/proc/%d/ns/%s", pid, t)
		if err := unix.Mount(src, p, "none", unix.MS_BIND, ""); err != nil {
			for _, c := range created {
				_ = Unpin(c)
			}
			return fmt.Errorf("nspin: bind-mount %s on %s: %w", src, p, err)
		}
	}
	return nil
}

// Configure sets hostname (if not empty) in the UTS namespace at uts and
// brings up loopback in the network namespace at net: what Pin does for
// the namespaces it creates, for ones pinned with PinProcess.
func Configure(net, uts, hostname string) error {
	paths := map[Type]string{Net: net}
	if hostname != "" {
		paths[UTS] = uts
	}
	return EnterAll(paths, func() error {
		if hostname != "" {
			if err := unix.Sethostname([]byte(hostname)); err != nil {
				return fmt.Errorf("nspin: set hostname %q: %w", hostname, err)
			}
		}
		return loopbackUp()
	})
}
