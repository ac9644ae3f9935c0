package server

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth/berth/internal/dirperm"
	"github.com/berth/berth/internal/runtime/idmap"
)

// idmapDir is where the idmapped clones of a container's volumes are
// attached while it starts (see attachIDMappedMounts).
func (s *Server) idmapDir(id string) string {
	return filepath.Join(s.cfg.StateDir, "idmapped", id)
}

// attachIDMappedMounts attaches, for the container's volumes that ask for
// ID mappings (c.IDMapped), a clone of each idmapped through its pod's user
// namespace, where its spec has runc bind-mount it from. The returned
// function detaches them all: once runc has run, the container's mount
// namespace holds its own copies, so they are needed only while it starts
// and nothing is left to track across restarts. Their directory is root's:
// the pod's root, who bind-mounts them, may pass through it (0711) but not
// add or change entries.
func (s *Server) attachIDMappedMounts(c container, sb sandbox) (detach func(), err error) {
	if len(c.IDMapped) == 0 {
		return func() {}, nil
	}
	if sb.UserNS == "" {
		return nil, fmt.Errorf("container %s has idmapped volumes but its pod no user namespace", c.ID)
	}
	dir := s.idmapDir(c.ID)
	detach = func() { _ = os.RemoveAll(dir) }
	if err := dirperm.MakeTraversable(dir); err != nil {
		detach()
		return nil, fmt.Errorf("idmapped volumes: %w", err)
	}
	ns, err := os.Open(sb.UserNS)
	if err != nil {
		detach()
		return nil, fmt.Errorf("idmapped volumes: the pod's user namespace: %w", err)
	}
	defer ns.Close()
	var attached []string
	detach = func() {
		idmap.Detach(attached...)
		_ = os.RemoveAll(dir)
	}
	for target, source := range c.IDMapped {
		if filepath.Dir(target) != dir {
			detach()
			return nil, fmt.Errorf("idmapped volume %s is outside %s", target, dir)
		}
		// Recursive, as every CRI bind mount is (rbind).
		if err := idmap.Attach(source, target, int(ns.Fd()), idmap.Options{Recursive: true}); err != nil {
			detach()
			return nil, fmt.Errorf("idmapped volume: %w", err)
		}
		attached = append(attached, target)
	}
	return detach, nil
}

// prepareIDMapRoot creates the directory of every container's idmapped
// volumes, traversable by their owners (0711), and ends attachments a
// start left behind when the runtime died during it: no start is in
// progress while the server is being made.
func (s *Server) prepareIDMapRoot() error {
	root := filepath.Join(s.cfg.StateDir, "idmapped")
	if err := dirperm.MakeTraversable(root); err != nil {
		return err
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	for _, d := range dirs {
		mounts, _ := filepath.Glob(filepath.Join(d, "*"))
		idmap.Detach(mounts...)
		if err := os.RemoveAll(d); err != nil {
			s.log.Warn("recovery: idmapped volumes of an interrupted start", "dir", d, "err", err)
		}
	}
	return nil
}
