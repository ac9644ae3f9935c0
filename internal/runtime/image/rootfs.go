package image

import (
	"context"
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
)

// rootfsManager owns the per-container directories dir/<id>/{upper,work,merged}
// and the overlay mounts on merged.
type rootfsManager struct {
	dir string
}

// mountRecord is persisted beside each container's overlay so Recover can
// remount it exactly after a restart or reboot.
type mountRecord struct {
	ImageID   string   `json:"imageID"`
	LowerDirs []string `json:"lowerDirs"` // topmost layer first, as overlayfs wants
	ReadOnly  bool     `json:"readOnly"`
}

var validContainerID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func newRootfsManager(dir string) (*rootfsManager, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create container rootfs dir: %w", err)
	}
	return &rootfsManager{dir: dir}, nil
}

func (m *rootfsManager) containerDir(id string) string { return filepath.Join(m.dir, id) }
func (m *rootfsManager) merged(id string) string       { return filepath.Join(m.dir, id, "merged") }

// prepare creates the container's directories, records the mount and mounts it.
func (m *rootfsManager) prepare(id string, rec mountRecord) (string, error) {
	dir := m.containerDir(id)
	for _, sub := range []string{"upper", "work", "merged"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", fmt.Errorf("create %s dir: %w", sub, err)
		}
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("encode mount record: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "mount.json"), raw, 0o600); err != nil {
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

// PrepareRootfs mounts the root filesystem of container containerID from
// image imageID (an ID, tag or digest): an overlay of the image's shared
// layer snapshots with a per-container upper and work directory. It records
// that the container uses the image, so RemoveImage refuses it until
// RemoveRootfs. readOnly mounts the overlay read-only; a container with a
// read-only root normally wants false here and Root.Readonly in its OCI spec,
// so that the OCI runtime can still create mount points before remounting.
// Calling it again for the same container and image returns the same path.
func (s *Service) PrepareRootfs(ctx context.Context, imageID, containerID string, readOnly bool) (string, error) {
	if err := checkContainerID(containerID); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.useLocked(imageID, containerID)
	if err != nil {
		return "", err
	}
	lowers := make([]string, 0, len(rec.ChainIDs))
	for i := len(rec.ChainIDs) - 1; i >= 0; i-- {
		p := s.layers.path(rec.ChainIDs[i])
		if _, err := os.Stat(p); err != nil {
			return "", status.Errorf(codes.FailedPrecondition, "image %s: layer snapshot missing: %v", rec.ID, err)
		}
		lowers = append(lowers, p)
	}
	path, err := s.rootfs.prepare(containerID, mountRecord{ImageID: rec.ID, LowerDirs: lowers, ReadOnly: readOnly})
	if err != nil {
		return "", status.Errorf(codes.Internal, "prepare rootfs of %s: %v", containerID, err)
	}
	s.log.DebugContext(ctx, "rootfs mounted", "container", containerID, "image", rec.ID, "path", path, "layers", len(lowers))
	return path, nil
}

// RemoveRootfs unmounts and deletes the container's root filesystem and
// releases its image. Removing one that does not exist is not an error.
func (s *Service) RemoveRootfs(ctx context.Context, containerID string) error {
	if err := checkContainerID(containerID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rootfs.remove(containerID); err != nil {
		return status.Errorf(codes.Internal, "%v", err)
	}
	return s.releaseLocked(containerID)
}

// Use records that containerID uses image imageRef (ID, tag or digest), so
// RemoveImage refuses the image until Release. PrepareRootfs does this itself.
func (s *Service) Use(imageRef, containerID string) error {
	if err := checkContainerID(containerID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.useLocked(imageRef, containerID)
	return err
}

// Release ends containerID's use of its image. RemoveRootfs does this itself.
func (s *Service) Release(containerID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releaseLocked(containerID)
}

func (s *Service) useLocked(imageRef, containerID string) (*imageRecord, error) {
	var rec *imageRecord
	err := s.meta.update(func(md *metadata) error {
		found, err := md.find(imageRef)
		if err != nil {
			return err
		}
		if found == nil {
			return notFound(imageRef)
		}
		if prev, ok := md.Users[containerID]; ok && prev != found.ID {
			return status.Errorf(codes.AlreadyExists, "container %s already uses image %s", containerID, prev)
		}
		md.Users[containerID] = found.ID
		rec = found
		return nil
	})
	return rec, err
}

func (s *Service) releaseLocked(containerID string) error {
	var present bool
	s.meta.view(func(md *metadata) { _, present = md.Users[containerID] })
	if !present {
		return nil
	}
	return s.meta.update(func(md *metadata) error {
		delete(md.Users, containerID)
		return nil
	})
}

// RecoverResult says what Recover found.
type RecoverResult struct {
	// Mounted lists containers whose rootfs is mounted and ready.
	Mounted []string
	// Failed maps containers whose rootfs could not be restored to why.
	Failed map[string]error
}

// Recover restores every container root filesystem after a restart: it
// remounts the overlays that are not mounted (after a reboot) and reports the
// ones it cannot restore. It never fails because one container is broken.
func (s *Service) Recover(ctx context.Context) (RecoverResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := RecoverResult{Failed: map[string]error{}}
	ids, err := s.rootfs.list()
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		if err := s.recoverOne(id); err != nil {
			s.log.WarnContext(ctx, "container rootfs not recovered", "container", id, "err", err)
			res.Failed[id] = err
			continue
		}
		res.Mounted = append(res.Mounted, id)
	}
	return res, nil
}

func (s *Service) recoverOne(id string) error {
	rec, err := s.rootfs.readRecord(id)
	if err != nil {
		return fmt.Errorf("read mount record: %w", err)
	}
	var user string
	s.meta.view(func(md *metadata) { user = md.Users[id] })
	if user != rec.ImageID {
		return fmt.Errorf("image %s is not recorded as used by this container", rec.ImageID)
	}
	for _, l := range rec.LowerDirs {
		if _, err := os.Stat(l); err != nil {
			return fmt.Errorf("layer snapshot missing: %w", err)
		}
	}
	return s.rootfs.mount(id, rec)
}
