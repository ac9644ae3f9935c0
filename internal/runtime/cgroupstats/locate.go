package cgroupstats

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berth/berth/internal/cgroupfs"
)

// cgroupPaths are the directories of one process's cgroups: per v1
// controller, and the unified (v2) one.
type cgroupPaths struct {
	v1      map[string]string // controller -> directory
	unified string
}

// locate resolves the process's cgroup directories through its
// /proc/PID/cgroup and this process's mount table.
func (r *Reader) locate(pid int) (cgroupPaths, error) {
	mounts, err := r.cgroupMounts()
	if err != nil {
		return cgroupPaths{}, err
	}
	f, err := os.Open(filepath.Join(r.Proc, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return cgroupPaths{}, fmt.Errorf("cgroupstats: %w", err)
	}
	defer f.Close()
	out := cgroupPaths{v1: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			if m, ok := findMount(mounts, ""); ok {
				out.unified = join(m, parts[2])
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if m, ok := findMount(mounts, c); ok {
				out.v1[c] = join(m, parts[2])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return cgroupPaths{}, fmt.Errorf("cgroupstats: read cgroup of %d: %w", pid, err)
	}
	if _, ok := out.v1["memory"]; !ok {
		// Only a v1 hierarchy with the memory controller makes a v1 host;
		// a hybrid host's unified tree then holds no controllers.
		out.v1 = nil
	}
	if out.v1 == nil && out.unified == "" {
		return cgroupPaths{}, fmt.Errorf("cgroupstats: no cgroup of process %d is mounted", pid)
	}
	return out, nil
}

// join maps a path inside m's hierarchy to a directory under the mount.
func join(m cgroupfs.Mount, cgpath string) string {
	rel := cgpath
	if m.Root != "/" {
		rel = strings.TrimPrefix(cgpath, m.Root)
	}
	return filepath.Join(m.Dir, rel)
}

// findMount returns the mount of the v1 hierarchy holding controller, or
// the cgroup2 mount when controller is "".
func findMount(mounts []cgroupfs.Mount, controller string) (cgroupfs.Mount, bool) {
	for _, m := range mounts {
		if (controller == "" && m.V2) || (controller != "" && !m.V2 && m.Has(controller)) {
			return m, true
		}
	}
	return cgroupfs.Mount{}, false
}

// cgroupMounts lists the cgroup filesystems in this process's mountinfo.
func (r *Reader) cgroupMounts() ([]cgroupfs.Mount, error) {
	f, err := os.Open(filepath.Join(r.Proc, "self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("cgroupstats: %w", err)
	}
	defer f.Close()
	mounts, err := cgroupfs.AllMounts(f)
	if err != nil {
		return nil, fmt.Errorf("cgroupstats: %w", err)
	}
	return mounts, nil
}
