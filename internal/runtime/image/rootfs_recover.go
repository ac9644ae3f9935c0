package image

import (
	"context"
	"fmt"
	"os"
)

// RecoverResult says what Recover found.
type RecoverResult struct {
	// Mounted lists containers whose rootfs is mounted and ready.
	Mounted []string
	// Failed maps containers whose rootfs could not be restored to why.
	Failed map[string]error
	// Uses maps every container recorded as using an image to that image's
	// ID, so the caller can Release (or RemoveRootfs) the containers it no
	// longer knows, e.g. after a crash between recording a use and creating
	// the container.
	Uses map[string]string
}

// Recover restores every container root filesystem after a restart: it
// remounts the overlays that are not mounted (after a reboot) and reports the
// ones it cannot restore. It never fails because one container is broken.
func (s *Service) Recover(ctx context.Context) (RecoverResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := RecoverResult{Failed: map[string]error{}, Uses: map[string]string{}}
	s.meta.view(func(md *metadata) {
		for c, img := range md.Users {
			res.Uses[c] = img
		}
	})
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
