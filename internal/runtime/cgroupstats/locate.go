package cgroupstats

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupPaths are the directories of one process's cgroups: per v1
// controller, and the unified (v2) one.
type cgroupPaths struct {
	v1      map[string]string // controller -> directory
	unified string
}

// mountPoint is a cgroup filesystem mount: which hierarchy it shows and
// from which root inside that hierarchy.
type mountPoint struct {
	dir, root   string
	controllers []string // nil for cgroup2
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
			if m, ok := findMount(mounts, nil); ok {
				out.unified = m.join(parts[2])
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if m, ok := findMount(mounts, []string{c}); ok {
				out.v1[c] = m.join(parts[2])
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

// join maps a path inside the hierarchy to a directory under the mount.
func (m mountPoint) join(cgpath string) string {
	rel := cgpath
	if m.root != "/" {
		rel = strings.TrimPrefix(cgpath, m.root)
	}
	return filepath.Join(m.dir, rel)
}

// findMount returns the mount of the v1 hierarchy holding want, or the
// cgroup2 mount when want is nil.
func findMount(mounts []mountPoint, want []string) (mountPoint, bool) {
	for _, m := range mounts {
		if want == nil && m.controllers == nil {
			return m, true
		}
		if want != nil {
			for _, c := range m.controllers {
				if c == want[0] {
					return m, true
				}
			}
		}
	}
	return mountPoint{}, false
}

// cgroupMounts lists the cgroup filesystems in this process's mountinfo.
func (r *Reader) cgroupMounts() ([]mountPoint, error) {
	f, err := os.Open(filepath.Join(r.Proc, "self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("cgroupstats: %w", err)
	}
	defer f.Close()
	var out []mountPoint
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m, ok := parseMountInfo(sc.Text())
		if ok {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cgroupstats: read mountinfo: %w", err)
	}
	return out, nil
}

// parseMountInfo reads one mountinfo line:
// ID parent major:minor root mountpoint options [optional...] - fstype source superoptions
func parseMountInfo(line string) (mountPoint, bool) {
	pre, post, ok := strings.Cut(line, " - ")
	if !ok {
		return mountPoint{}, false
	}
	f, g := strings.Fields(pre), strings.Fields(post)
	if len(f) < 5 || len(g) < 3 {
		return mountPoint{}, false
	}
	m := mountPoint{root: f[3], dir: f[4]}
	switch g[0] {
	case "cgroup2":
		return m, true
	case "cgroup":
		for _, opt := range strings.Split(g[2], ",") {
			switch opt {
			case "rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec":
			default:
				m.controllers = append(m.controllers, opt)
			}
		}
		return m, len(m.controllers) > 0
	}
	return mountPoint{}, false
}
