package image

import (
	"context"
	"os"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// PrepareRootfs mounts the root filesystem of container containerID from
// image imageID (an ID, tag or digest): an overlay of the image's shared
// layer snapshots with a per-container upper and work directory. It records
// that the container uses the image (see image_use.go), so RemoveImage
// refuses it until RemoveRootfs. opts say how (see RootfsOptions).
// Calling it again for the same container and image returns the same path.
func (s *Service) PrepareRootfs(ctx context.Context, imageID, containerID string, opts RootfsOptions) (string, error) {
	if err := checkContainerID(containerID); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.lookup(imageID)
	if err != nil {
		return "", err
	}
	if rec == nil {
		return "", notFound(imageID)
	}
	lowers := make([]string, 0, len(rec.ChainIDs))
	for i := len(rec.ChainIDs) - 1; i >= 0; i-- {
		p := s.layers.path(rec.ChainIDs[i])
		if _, err := os.Stat(p); err != nil {
			return "", status.Errorf(codes.FailedPrecondition, "image %s: layer snapshot missing: %v", rec.ID, err)
		}
		lowers = append(lowers, p)
	}
	_, statErr := os.Stat(s.rootfs.containerDir(containerID))
	repeat := statErr == nil
	if _, err := s.useLocked(rec.ID, containerID); err != nil {
		return "", err
	}
	path, err := s.rootfs.prepare(containerID, mountRecord{ImageID: rec.ID, LowerDirs: lowers, RootfsOptions: opts})
	if err != nil {
		if !repeat {
			// Leave nothing half-created: no directories, no use of the image.
			if rerr := s.rootfs.remove(containerID); rerr != nil {
				s.log.WarnContext(ctx, "cleanup of failed rootfs", "container", containerID, "err", rerr)
			}
			s.releaseLocked(containerID)
		}
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
	s.releaseLocked(containerID)
	return nil
}
