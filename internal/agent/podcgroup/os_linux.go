package podcgroup

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/berth/berth/internal/cgroupfs"
)

// HostOS is the machine's cgroup filesystems, as this process's mount
// table shows them.
type HostOS struct{}

// Hierarchies reads the cgroup and cgroup2 mounts of /proc/self/mountinfo.
func (HostOS) Hierarchies() ([]string, error) {
	mounts, err := cgroupfs.HostMounts()
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(mounts))
	for i, m := range mounts {
		dirs[i] = m.Dir
	}
	return dirs, nil
}

// SubDirs lists dir's subdirectories.
func (HostOS) SubDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Rmdir removes the directory dir: on a cgroup filesystem, the cgroup, if
// it holds no processes and no children.
func (HostOS) Rmdir(dir string) error {
	if err := unix.Rmdir(dir); err != nil {
		return &os.PathError{Op: "rmdir", Path: dir, Err: err}
	}
	return nil
}
