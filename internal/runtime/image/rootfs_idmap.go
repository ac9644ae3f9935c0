package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// idmapLayers attaches, under dir/0, dir/1, ..., a clone of each layer
// directory mounted through the ID mappings of the user namespace at
// userns (an idmapped mount: a file the layer gives host ID 0 shows as the
// namespace's root), and returns their paths for overlayfs to stack. On
// error none stays attached.
//
// Written with x/sys/unix because no maintained Go library makes idmapped
// mounts outside an OCI runtime (runc does them only for bind mounts, and
// only from 1.2), and the root filesystem is the runtime's own business.
func idmapLayers(layers []string, dir, userns string) ([]string, error) {
	ns, err := os.Open(userns)
	if err != nil {
		return nil, fmt.Errorf("idmapped layers: user namespace: %w", err)
	}
	defer ns.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("idmapped layers: %w", err)
	}
	var attached []string
	for i, layer := range layers {
		target := filepath.Join(dir, strconv.Itoa(i))
		if err := idmapOne(layer, target, int(ns.Fd())); err != nil {
			detachAll(attached)
			return nil, fmt.Errorf("idmapped layer %s: %w", layer, err)
		}
		attached = append(attached, target)
	}
	return attached, nil
}

func idmapOne(layer, target string, usernsFd int) error {
	if err := os.Mkdir(target, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, layer, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(usernsFd)}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("idmap: %w", err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	return nil
}

// detachAll lazily unmounts and removes each path; errors are of no use to
// the caller, which has either mounted the overlay or failed already.
func detachAll(paths []string) {
	for _, p := range paths {
		_ = unix.Unmount(p, unix.MNT_DETACH)
		_ = os.Remove(p)
	}
}
