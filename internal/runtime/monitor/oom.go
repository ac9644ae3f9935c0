package monitor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berth/berth/internal/cgroupfs"
)

const cgroupRoot = "/sys/fs/cgroup"

// bundleCgroupsPath is the OCI cgroupsPath of the bundle's config.json.
func bundleCgroupsPath(bundle string) (string, error) {
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return "", fmt.Errorf("read the bundle's config: %w", err)
	}
	var spec struct {
		Linux *struct {
			CgroupsPath string `json:"cgroupsPath"`
		} `json:"linux"`
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return "", fmt.Errorf("read the bundle's config: %w", err)
	}
	if spec.Linux == nil {
		return "", nil
	}
	return spec.Linux.CgroupsPath, nil
}

// oomCounterAt locates the file that counts OOM kills in the memory cgroup
// at cgroupsPath, an absolute cgroupfs-driver path (runc places it below
// each hierarchy's mount point, as package pause does): memory.oom_control
// in the cgroup v1 memory hierarchy, else memory.events in the unified one.
// Unlike the process's /proc/<pid>/cgroup it holds after the process has
// exited: a container can run out of memory before `runc run` returns, and
// an exited process shows the root cgroup.
func oomCounterAt(cgroupsPath string, mounts []cgroupfs.Mount) (path, key string, err error) {
	var unified string
	for _, m := range mounts {
		switch {
		case !m.V2 && m.Has("memory"):
			return filepath.Join(m.Dir, cgroupsPath, "memory.oom_control"), "oom_kill", nil
		case m.V2 && unified == "":
			unified = m.Dir
		}
	}
	if unified != "" {
		return filepath.Join(unified, cgroupsPath, "memory.events"), "oom_kill", nil
	}
	return "", "", fmt.Errorf("no memory cgroup hierarchy is mounted")
}

// oomCounter locates the OOM kill counter of a running process's memory
// cgroup from /proc/<pid>/cgroup, for a bundle whose cgroups path is not
// absolute (runc places a relative one below its own cgroup).
func oomCounter(pid int) (path, key string, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var unified string
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				return filepath.Join(cgroupRoot, "memory", parts[2], "memory.oom_control"), "oom_kill", nil
			}
		}
	}
	if unified != "" {
		return filepath.Join(cgroupRoot, unified, "memory.events"), "oom_kill", nil
	}
	return "", "", fmt.Errorf("no memory cgroup for pid %d", pid)
}

// oomKills reads the OOM kill count; the cgroup lives on until `runc
// delete`, so it can be read after the container has exited.
func oomKills(path, key string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			return strconv.ParseUint(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", path, key)
}
