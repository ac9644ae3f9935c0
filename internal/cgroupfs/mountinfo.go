// Package cgroupfs reads where the machine's cgroup filesystems are
// mounted: each cgroup v1 hierarchy (with its controllers) and the cgroup2
// unified one. The agent removes pod cgroups in every hierarchy; the
// monitor places a pod's pause process in them.
package cgroupfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Mount is one mounted cgroup hierarchy.
type Mount struct {
	Dir string // mount point
	V2  bool   // cgroup2 (unified); else a v1 hierarchy
	// Options are a v1 hierarchy's super options: its controllers
	// ("cpu", "memory", ...) and its name ("name=systemd"), among others.
	Options []string
}

// Has reports whether a v1 hierarchy carries the controller (or option) c.
func (m Mount) Has(c string) bool { return slices.Contains(m.Options, c) }

// Mounts returns the cgroup and cgroup2 mounts of a mountinfo table, each
// mount point once. A line is
// "ID parent major:minor root mountpoint options [optional...] - fstype source superoptions".
func Mounts(r io.Reader) ([]Mount, error) {
	var out []Mount
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields, fsFields, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		mount, fsType := strings.Fields(fields), strings.Fields(fsFields)
		if len(mount) < 5 || len(fsType) < 1 || (fsType[0] != "cgroup" && fsType[0] != "cgroup2") {
			continue
		}
		dir := unescapeMountPoint(mount[4])
		if seen[dir] {
			continue
		}
		seen[dir] = true
		m := Mount{Dir: dir, V2: fsType[0] == "cgroup2"}
		if len(fsType) >= 3 {
			m.Options = strings.Split(fsType[2], ",")
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
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

// unescapeMountPoint undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPoint(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
