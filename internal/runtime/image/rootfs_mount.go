package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/atomicfile"
	"github.com/berth/berth/internal/dirperm"
	"github.com/berth/berth/internal/runtime/idmap"
)

// rootfsManager owns the per-container directories dir/<id>/{upper,work,merged}
// and the overlay mounts on merged.
type rootfsManager struct {
	dir string
}

// RootfsOptions say how PrepareRootfs mounts a container's root filesystem.
type RootfsOptions struct {
	// ReadOnly mounts the overlay read-only. A container with a read-only
	// root normally wants false here and Root.Readonly in its OCI spec, so
	// that the OCI runtime can still create mount points before remounting.
	ReadOnly bool `json:"readOnly"`
	// Owner, for a container in a user namespace of its own, is the host
	// user and group of that namespace's root, which must reach its root
	// filesystem and own it: the overlay's root is theirs, and the
	// container's directory lets them pass (0711) but stays root's, so
	// they can neither list it nor touch the mount record in it.
	Owner *Owner `json:"owner,omitempty"`
	// IDMapUserns, if set, is a user namespace (a /proc/PID/ns/user or a
	// pinned one) through whose ID mappings the image's layers are
	// mounted, so that files the image gives root belong to the
	// container's root, not the host's. It needs idmapped mounts (Linux
	// 5.19 with overlayfs on idmapped layers).
	IDMapUserns string `json:"idmapUserns,omitempty"`
}

// Owner is a host user and group.
type Owner struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// mountRecord is persisted beside each container's overlay so Recover can
// remount it exactly after a restart or reboot (an idmapped one only while
// its user namespace lives).
type mountRecord struct {
	ImageID   string   `json:"imageID"`
	LowerDirs []string `json:"lowerDirs"` // topmost layer first, as overlayfs wants
	RootfsOptions
}

var validContainerID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func newRootfsManager(dir string) (*rootfsManager, error) {
	// Each container's directory is private (see prepare); this one only
	// lets their owners through, also where an older version made it 0700.
	if err := dirperm.MakeTraversable(dir); err != nil {
		return nil, fmt.Errorf("container rootfs dir: %w", err)
	}
	return &rootfsManager{dir: dir}, nil
}

func (m *rootfsManager) containerDir(id string) string { return filepath.Join(m.dir, id) }
func (m *rootfsManager) merged(id string) string       { return filepath.Join(m.dir, id, "merged") }

// prepare creates the container's directories, records the mount and mounts it.
// The container's directory is root's and private (0700), or passable
// (0711) for the owner of a user-namespaced one (see RootfsOptions.Owner);
// its parents are passable too.
func (m *rootfsManager) prepare(id string, rec mountRecord) (string, error) {
	dir := m.containerDir(id)
	mode := os.FileMode(0o700)
	if rec.Owner != nil {
		mode = 0o711
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return "", fmt.Errorf("create container dir: %w", err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		return "", fmt.Errorf("container dir: %w", err)
	}
	for _, sub := range []string{"upper", "work", "merged"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", fmt.Errorf("create %s dir: %w", sub, err)
		}
	}
	if o := rec.Owner; o != nil {
		// upper's root is the overlay's root.
		if err := os.Lchown(filepath.Join(dir, "upper"), int(o.UID), int(o.GID)); err != nil {
			return "", fmt.Errorf("give the overlay's root to %d:%d: %w", o.UID, o.GID, err)
		}
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("encode mount record: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "mount.json"), raw, 0o600); err != nil {
		return "", err
	}
	if err := m.mount(id, rec); err != nil {
		return "", err
	}
	return m.merged(id), nil
}

func (m *rootfsManager) readRecord(id string) (mountRecord, error) {
	var rec mountRecord
	raw, err := os.ReadFile(filepath.Join(m.containerDir(id), "mount.json"))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("mount record of %s is corrupt: %w", id, err)
	}
	return rec, nil
}

// mount mounts the overlay unless it is mounted already.
func (m *rootfsManager) mount(id string, rec mountRecord) error {
	merged := m.merged(id)
	if mounted, err := isMountPoint(merged); err != nil {
		return err
	} else if mounted {
		return nil
	}
	lowers := rec.LowerDirs
	if len(lowers) == 0 {
		// An image without layers: overlayfs still needs a lowerdir.
		empty := filepath.Join(m.containerDir(id), "empty")
		if err := os.MkdirAll(empty, 0o755); err != nil {
			return fmt.Errorf("create empty lowerdir: %w", err)
		}
		lowers = []string{empty}
	}
	dir := m.containerDir(id)
	paths := append(slices.Clone(lowers), dir)
	for _, p := range paths {
		if strings.ContainsAny(p, ":,") {
			return fmt.Errorf("overlay path %q contains ':' or ','", p)
		}
	}
	if rec.IDMapUserns != "" {
		idmapped, err := idmapLayers(lowers, filepath.Join(dir, "lower"), rec.IDMapUserns)
		if err != nil {
			return err
		}
		// overlayfs keeps private clones of its layers' mounts, so the
		// idmapped ones need not stay attached once it is mounted.
		defer idmap.Detach(idmapped...)
		lowers = idmapped
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,index=off",
		strings.Join(lowers, ":"), filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
	if len(data) >= os.Getpagesize() {
		return fmt.Errorf("overlay options for %d layers exceed one page (%d bytes)", len(lowers), len(data))
	}
	var flags uintptr
	if rec.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("overlay", merged, "overlay", flags, data); err != nil {
		return fmt.Errorf("mount overlay on %s: %w", merged, err)
	}
	return nil
}

// remove unmounts and deletes the container's directories.
func (m *rootfsManager) remove(id string) error {
	merged := m.merged(id)
	if mounted, err := isMountPoint(merged); err == nil && mounted {
		if err := unix.Unmount(merged, 0); err != nil {
			if !errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("unmount %s: %w", merged, err)
			}
			// Still busy (a process holds it): detach so the directory
			// can go now and the kernel frees the mount when unused.
			if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("detach %s: %w", merged, err)
			}
		}
	}
	if err := os.RemoveAll(m.containerDir(id)); err != nil {
		return fmt.Errorf("remove rootfs of %s: %w", id, err)
	}
	return nil
}

// list returns the IDs of the containers that have a rootfs directory.
func (m *rootfsManager) list() ([]string, error) {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, fmt.Errorf("list container rootfs dirs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// isMountPoint reports whether path is the root of a mount: its device
// differs from its parent's (true of every overlay mount).
func isMountPoint(path string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := unix.Lstat(filepath.Dir(path), &parent); err != nil {
		return false, fmt.Errorf("stat %s: %w", filepath.Dir(path), err)
	}
	return st.Dev != parent.Dev, nil
}

func checkContainerID(id string) error {
	if !validContainerID.MatchString(id) {
		return status.Errorf(codes.InvalidArgument, "invalid container ID %q", id)
	}
	return nil
}
