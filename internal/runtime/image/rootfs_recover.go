package image

import (
	"context"
	"fmt"
	"maps"
	"os"
)

// RecoverResult says what Recover found.
type RecoverResult struct {
	// Mounted lists containers whose rootfs is mounted and ready.
	Mounted []string
	// Failed maps containers whose rootfs could not be restored to why.
	Failed map[string]error
	// Uses maps every container whose rootfs records an image to that
	// image's ID, so the caller can RemoveRootfs the containers it no longer
	// knows, e.g. after a crash between preparing a rootfs and recording
	// the container.
	Uses map[string]string
}

// Recover restores every container root filesystem after a restart: it
// remounts the overlays that are not mounted (after a reboot) and reports the
// ones it cannot restore. It never fails because one container is broken.
func (s *Service) Recover(ctx context.Context) (RecoverResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := RecoverResult{Failed: map[string]error{}, Uses: maps.Clone(s.users)}
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
	var known bool
	s.meta.view(func(md *metadata) { known = md.Images[rec.ImageID] != nil })
	if !known {
		return fmt.Errorf("its image %s is not in the store", rec.ImageID)
	}
	for _, l := range rec.LowerDirs {
		if _, err := os.Stat(l); err != nil {
			return fmt.Errorf("layer snapshot missing: %w", err)
		}
	}
	return s.rootfs.mount(id, rec)
}
