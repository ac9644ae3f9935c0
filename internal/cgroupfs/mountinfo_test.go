package cgroupfs

import (
	"reflect"
	"strings"
	"testing"
)

const table = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:32 /outer /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
43 23 0:40 /with\011tab /mnt/with\040space\134and\012more rw - cgroup2 cgroup2 rw
44 23 8:1 / / rw,relatime - ext4 /dev/sda1 rw
`

func TestMountsReadsV1AndV2MountsOnce(t *testing.T) {
	got, err := Mounts(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Dir: "/sys/fs/cgroup/cpu,cpuacct", Root: "/", Options: []string{"rw", "cpu", "cpuacct"}},
		{Dir: "/sys/fs/cgroup/memory", Root: "/", Options: []string{"rw", "memory"}},
		{Dir: "/sys/fs/cgroup/systemd", Root: "/", Options: []string{"rw", "xattr", "name=systemd"}},
		{Dir: "/sys/fs/cgroup/unified", Root: "/", V2: true, Options: []string{"rw"}},
		{Dir: "/mnt/with space\\and\nmore", Root: "/with\ttab", V2: true, Options: []string{"rw"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Mounts =\n%+v\nwant\n%+v", got, want)
	}
	if !got[0].Has("cpuacct") || got[1].Has("cpu") {
		t.Errorf("Has: cpu,cpuacct has cpuacct %v, memory has cpu %v", got[0].Has("cpuacct"), got[1].Has("cpu"))
	}
}

func TestAllMountsKeepsEveryMountInTableOrder(t *testing.T) {
	got, err := AllMounts(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range got {
		dirs = append(dirs, m.Dir+" from "+m.Root)
	}
	want := []string{
		"/sys/fs/cgroup/cpu,cpuacct from /", "/sys/fs/cgroup/memory from /", "/sys/fs/cgroup/systemd from /",
		"/sys/fs/cgroup/unified from /", "/sys/fs/cgroup/memory from /outer", "/mnt/with space\\and\nmore from /with\ttab",
	}
	if !reflect.DeepEqual(dirs, want) {
		t.Errorf("AllMounts =\n%q\nwant\n%q", dirs, want)
	}
}

func TestMountsRejectsATruncatedTable(t *testing.T) {
	if got, err := Mounts(strings.NewReader("32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup\n")); err == nil {
		t.Errorf("a line without source and super options read as %+v, want an error", got)
	}
}
