package spec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/berth/berth/internal/cgroupfs"
	"github.com/berth/berth/internal/testkit/hostcheck"
)

func fakeRuntime(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-runc")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDetectHostReadsFeatures(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		rro          bool
	}{
		{"rro listed", `echo '{"mountOptions":["bind","rro","ro"]}'`, true},
		{"rro absent", `echo '{"mountOptions":["bind","ro"]}'`, false},
		{"no features command", `echo "unknown command" >&2; exit 1`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := DetectHost(context.Background(), fakeRuntime(t, tc.script))
			if err != nil {
				t.Fatal(err)
			}
			if h.RecursiveReadOnly != tc.rro {
				t.Errorf("RecursiveReadOnly %v, want %v", h.RecursiveReadOnly, tc.rro)
			}
			own, _ := os.ReadFile("/proc/self/oom_score_adj")
			if want := string(own); want != "" && itoaSpec(h.OOMScoreAdjMin)+"\n" != want {
				t.Errorf("OOMScoreAdjMin %d, own %q", h.OOMScoreAdjMin, want)
			}
		})
	}
	if _, err := DetectHost(context.Background(), fakeRuntime(t, `echo not-json`)); err == nil {
		t.Error("malformed features accepted")
	}
}

func TestDetectHostWithRealRunc(t *testing.T) {
	hostcheck.Require(t, hostcheck.Runc)
	runc, err := hostcheck.RuncPath()
	if err != nil {
		t.Fatal(err)
	}
	h, err := DetectHost(context.Background(), runc)
	if err != nil {
		t.Fatal(err)
	}
	// runc 1.1 added the features command and recursive mount attributes.
	out, err := exec.Command(runc, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(out), "runc version %d.%d", &major, &minor); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	if want := major > 1 || (major == 1 && minor >= 1); h.RecursiveReadOnly != want {
		t.Errorf("runc %d.%d: RecursiveReadOnly %v, want %v", major, minor, h.RecursiveReadOnly, want)
	}
}

func itoaSpec(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestHugetlbOnlyWhereRuncPlacesContainers(t *testing.T) {
	controllers := func(list string) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			if path != "/sys/fs/cgroup/unified/cgroup.controllers" && path != "/sys/fs/cgroup/cgroup.controllers" {
				return nil, fmt.Errorf("unexpected read of %s", path)
			}
			return []byte(list + "\n"), nil
		}
	}
	memory := cgroupfs.Mount{Dir: "/sys/fs/cgroup/memory", Options: []string{"rw", "memory"}}
	hugetlb := cgroupfs.Mount{Dir: "/sys/fs/cgroup/hugetlb", Options: []string{"rw", "hugetlb"}}
	hybridUnified := cgroupfs.Mount{Dir: "/sys/fs/cgroup/unified", V2: true}
	unified := cgroupfs.Mount{Dir: "/sys/fs/cgroup", V2: true}
	for _, tc := range []struct {
		name   string
		mounts []cgroupfs.Mount
		read   func(string) ([]byte, error)
		want   bool
	}{
		{"v1 hierarchy with hugetlb", []cgroupfs.Mount{memory, hugetlb, hybridUnified}, controllers("hugetlb"), true},
		{"hybrid: hugetlb only in the unified hierarchy", []cgroupfs.Mount{memory, hybridUnified}, controllers("hugetlb"), false},
		{"v2 with hugetlb", []cgroupfs.Mount{unified}, controllers("cpuset cpu io memory hugetlb pids"), true},
		{"v2 without hugetlb", []cgroupfs.Mount{unified}, controllers("cpuset cpu io memory pids"), false},
	} {
		if got := hugetlbIn(tc.mounts, tc.read); got != tc.want {
			t.Errorf("%s: hugetlb %v, want %v", tc.name, got, tc.want)
		}
	}
}
