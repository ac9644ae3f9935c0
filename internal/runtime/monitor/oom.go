package monitor

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const cgroupRoot = "/sys/fs/cgroup"

// oomCounter locates the file that counts OOM kills in a process's memory
// cgroup: memory.events (cgroup v2) or memory.oom_control (v1), and the key.
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
