package image

import (
	"os"
	"path/filepath"
)

// WritableLayer is the upper directory of a container's rootfs, where its
// writes land ("" when the container has no rootfs here), so the runtime
// can report the container's disk usage.
func (s *Service) WritableLayer(containerID string) string {
	dir := filepath.Join(s.rootfs.containerDir(containerID), "upper")
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}
