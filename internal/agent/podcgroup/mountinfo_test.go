package podcgroup

import (
	"slices"
	"strings"
	"testing"
)

func TestCgroupMountPointsReadsV1AndV2MountsOnce(t *testing.T) {
	const mountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
43 23 0:40 /docker /mnt/with\040space rw - cgroup2 cgroup2 rw
44 23 8:1 / / rw,relatime - ext4 /dev/sda1 rw
`
	got, err := cgroupMountPoints(strings.NewReader(mountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/mnt/with space"}
	if !slices.Equal(got, want) {
		t.Errorf("cgroupMountPoints = %q, want %q", got, want)
	}
}
