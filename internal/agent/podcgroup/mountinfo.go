package podcgroup

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// cgroupMountPoints returns the mount points of the cgroup (v1) and cgroup2
// filesystems in a mountinfo table, each once. A line is
// "ID parent major:minor root mountpoint options [optional...] - fstype source superoptions".
func cgroupMountPoints(r io.Reader) ([]string, error) {
	var out []string
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
		if !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
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
