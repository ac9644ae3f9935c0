package cgroupfs

import (
	"fmt"
	"io"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// AllMounts returns every cgroup and cgroup2 mount of a mountinfo table
// (proc(5)), in the table's order. moby's parser undoes the table's octal
// escapes (\040 for a space) in mount points and roots.
func AllMounts(r io.Reader) ([]Mount, error) {
	infos, err := mountinfo.GetMountsFromReader(r, mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	out := make([]Mount, len(infos))
	for i, in := range infos {
		out[i] = Mount{Dir: in.Mountpoint, Root: in.Root, V2: in.FSType == "cgroup2", Options: strings.Split(in.VFSOptions, ",")}
	}
	return out, nil
}
