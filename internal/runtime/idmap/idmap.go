// Package idmap makes idmapped mounts: a clone of a directory or file,
// mounted so that its files' IDs are seen through the ID mappings of a user
// namespace (a file a layer gives host ID 0 shows as the namespace's root).
// The runtime uses it for the image layers under a user-namespaced pod's
// root filesystems and for the pod's volumes, so that runc needs no
// idmapped-mount support of its own (runc has it only from 1.2, and only
// for bind mounts).
//
// Written with x/sys/unix because no maintained Go library makes idmapped
// mounts outside an OCI runtime.
package idmap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Options say how Attach clones its source.
type Options struct {
	// Recursive clones the source's submounts too (an rbind), each
	// idmapped; their filesystems must all support it.
	Recursive bool
	ReadOnly  bool
}

// Attach mounts at target a clone of source idmapped through the user
// namespace open as usernsFd. target is created (a directory, or an empty
// file for a file source) if it does not exist.
func Attach(source, target string, usernsFd int, o Options) error {
	fi, err := os.Stat(source)
	if err != nil {
		return fmt.Errorf("idmap: %w", err)
	}
	if err := makeMountPoint(target, fi.IsDir()); err != nil {
		return fmt.Errorf("idmap: mount point %s: %w", target, err)
	}
	flags := unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC
	setFlags := unix.AT_EMPTY_PATH
	if o.Recursive {
		flags |= unix.AT_RECURSIVE
		setFlags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, source, uint(flags))
	if err != nil {
		return fmt.Errorf("idmap: clone %s: %w", source, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(usernsFd)}
	if o.ReadOnly {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", uint(setFlags), &attr); err != nil {
		return fmt.Errorf("idmap: %s: %w", source, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("idmap: attach %s on %s: %w", source, target, err)
	}
	return nil
}

func makeMountPoint(target string, dir bool) error {
	if dir {
		if err := os.Mkdir(target, 0o700); err != nil && !os.IsExist(err) {
			return err
		}
		return nil
	}
	f, err := os.OpenFile(target, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// Detach lazily unmounts each path and removes it. Errors are not
// returned: callers detach what they attached once it is no longer needed
// (a clone held elsewhere lives on), or while undoing a failure.
func Detach(paths ...string) {
	for _, p := range paths {
		_ = unix.Unmount(p, unix.MNT_DETACH)
		_ = os.Remove(p)
	}
}
