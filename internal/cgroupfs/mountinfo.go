// Package cgroupfs reads where the machine's cgroup filesystems are
// mounted: each cgroup v1 hierarchy (with its controllers) and the cgroup2
// unified one. The agent removes pod cgroups in every hierarchy; the
// monitor places a pod's pause process in them; the runtime's stats reader
// finds a process's cgroup directories through them.
package cgroupfs

import (
	"fmt"
	"io"
	"os"
	"slices"
)

// Mount is one mounted cgroup hierarchy.
type Mount struct {
	Dir string // mount point
	// Root is the directory of the hierarchy that the mount shows ("/" for
	// all of it; a nested runtime may see only its own part).
	Root string
	V2   bool // cgroup2 (unified); else a v1 hierarchy
	// Options are the mount's super options: a v1 hierarchy's controllers
	// ("cpu", "memory", ...) and its name ("name=systemd"), among others.
	Options []string
}

// Has reports whether a v1 hierarchy carries the controller (or option) c.
func (m Mount) Has(c string) bool { return slices.Contains(m.Options, c) }

// Mounts returns the cgroup and cgroup2 mounts of a mountinfo table, each
// mount point once (the first line that names it).
func Mounts(r io.Reader) ([]Mount, error) {
	all, err := AllMounts(r)
	if err != nil {
		return nil, err
	}
	var out []Mount
	seen := map[string]bool{}
	for _, m := range all {
		if !seen[m.Dir] {
			seen[m.Dir] = true
			out = append(out, m)
		}
	}
	return out, nil
}

// HostMounts reads this process's mount table.
func HostMounts() ([]Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup hierarchies: %w", err)
	}
	defer f.Close()
	return Mounts(f)
}
