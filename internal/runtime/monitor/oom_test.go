package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth/berth/internal/cgroupfs"
)

func TestOOMCounterAtFollowsTheMemoryHierarchy(t *testing.T) {
	hybrid := []cgroupfs.Mount{
		{Dir: "/sys/fs/cgroup/unified", Root: "/", V2: true},
		{Dir: "/sys/fs/cgroup/cpu,cpuacct", Root: "/", Options: []string{"rw", "cpu", "cpuacct"}},
		{Dir: "/sys/fs/cgroup/memory", Root: "/", Options: []string{"rw", "memory"}},
	}
	unified := []cgroupfs.Mount{{Dir: "/sys/fs/cgroup", Root: "/", V2: true}}
	for _, tc := range []struct {
		name   string
		mounts []cgroupfs.Mount
		want   string
	}{
		{"cgroup v1 memory hierarchy, ahead of a unified one", hybrid, "/sys/fs/cgroup/memory/kubepods/c1/memory.oom_control"},
		{"cgroup v2", unified, "/sys/fs/cgroup/kubepods/c1/memory.events"},
	} {
		path, key, err := oomCounterAt("/kubepods/c1", tc.mounts)
		if err != nil || path != tc.want || key != "oom_kill" {
			t.Errorf("%s: %q %q %v, want %q oom_kill", tc.name, path, key, err, tc.want)
		}
	}
	if _, _, err := oomCounterAt("/kubepods/c1", []cgroupfs.Mount{hybrid[1]}); err == nil {
		t.Error("no memory hierarchy: no error")
	}
}

// The counter is found from the bundle alone, so it is found even when the
// container has exited before the monitor looks (its process then shows
// the root cgroup, or is gone).
func TestContainerOOMCounterComesFromTheBundle(t *testing.T) {
	bundle := t.TempDir()
	write := func(config string) {
		if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := &monitor{cfg: Config{Bundle: bundle}, pid: -1}
	write(`{"ociVersion":"1.2.0","linux":{"cgroupsPath":"/berth/pod1/c1","resources":{}}}`)
	path, key, err := m.containerOOMCounter()
	v1, v2 := strings.HasSuffix(path, "/berth/pod1/c1/memory.oom_control"), strings.HasSuffix(path, "/berth/pod1/c1/memory.events")
	if err != nil || key != "oom_kill" || !(v1 || v2) {
		t.Errorf("counter of the absolute cgroups path /berth/pod1/c1: %q %q %v", path, key, err)
	}
	// A relative path is below runc's own cgroup: found from the process,
	// which here does not exist.
	write(`{"linux":{"cgroupsPath":"pod1/c1"}}`)
	if path, _, err := m.containerOOMCounter(); err == nil {
		t.Errorf("relative cgroups path of no process: %q, no error", path)
	}
	write(`{"linux":`)
	if _, _, err := m.containerOOMCounter(); err == nil {
		t.Error("unreadable config: no error")
	}
}
