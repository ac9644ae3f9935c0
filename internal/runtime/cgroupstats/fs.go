package cgroupstats

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Filesystem is a container's writable layer: the space its files use and
// the capacity of the filesystem holding it.
type Filesystem struct {
	Device                  string // "major:minor" of the backing filesystem
	UsageBytes, LimitBytes  uint64
	InodesTotal, InodesFree uint64
}

// ReadFilesystem measures dir (a writable layer's upper directory).
func ReadFilesystem(dir string) (Filesystem, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Filesystem{}, fmt.Errorf("cgroupstats: statfs %s: %w", dir, err)
	}
	var dst unix.Stat_t
	if err := unix.Stat(dir, &dst); err != nil {
		return Filesystem{}, fmt.Errorf("cgroupstats: stat %s: %w", dir, err)
	}
	out := Filesystem{
		Device:      fmt.Sprintf("%d:%d", unix.Major(uint64(dst.Dev)), unix.Minor(uint64(dst.Dev))),
		LimitBytes:  st.Blocks * uint64(st.Bsize),
		InodesTotal: st.Files,
		InodesFree:  st.Ffree,
	}
	// Usage counts allocated blocks, as du does; files vanishing mid-walk
	// are skipped.
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var s unix.Stat_t
		if unix.Lstat(path, &s) == nil {
			out.UsageBytes += uint64(s.Blocks) * 512
		}
		return nil
	})
	return out, nil
}
