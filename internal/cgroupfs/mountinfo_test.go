package cgroupfs

import (
	"reflect"
	"strings"
	"testing"
)

func TestMountsReadsV1AndV2MountsOnce(t *testing.T) {
	const mountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
43 23 0:40 /docker /mnt/with\040space rw - cgroup2 cgroup2 rw
44 23 8:1 / / rw,relatime - ext4 /dev/sda1 rw
`
	got, err := Mounts(strings.NewReader(mountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Dir: "/sys/fs/cgroup/cpu,cpuacct", Options: []string{"rw", "cpu", "cpuacct"}},
		{Dir: "/sys/fs/cgroup/memory", Options: []string{"rw", "memory"}},
		{Dir: "/sys/fs/cgroup/systemd", Options: []string{"rw", "xattr", "name=systemd"}},
		{Dir: "/sys/fs/cgroup/unified", V2: true, Options: []string{"rw"}},
		{Dir: "/mnt/with space", V2: true, Options: []string{"rw"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Mounts =\n%+v\nwant\n%+v", got, want)
	}
	if !got[0].Has("cpuacct") || got[1].Has("cpu") {
		t.Errorf("Has: cpu,cpuacct has cpuacct %v, memory has cpu %v", got[0].Has("cpuacct"), got[1].Has("cpu"))
	}
}
