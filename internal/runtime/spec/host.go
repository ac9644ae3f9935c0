package spec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/berth/berth/internal/cgroupfs"
)

// DetectHost finds what the host and the OCI runtime binary offer: the
// runtime's own oom_score_adj (the floor for containers), its capability
// bounding set (the ceiling), and whether the
// OCI runtime supports recursive read-only mounts (it lists "rro" among
// its mount options in `<runtime> features`, runc >= 1.1).
func DetectHost(ctx context.Context, ociRuntime string) (Host, error) {
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return Host{}, fmt.Errorf("read own oom_score_adj: %w", err)
	}
	oom, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return Host{}, fmt.Errorf("parse own oom_score_adj: %w", err)
	}
	rro, err := supportsRecursiveReadOnly(ctx, ociRuntime)
	if err != nil {
		return Host{}, err
	}
	caps, err := ownCapabilities()
	if err != nil {
		return Host{}, fmt.Errorf("read own capabilities: %w", err)
	}
	hugetlb, err := hugetlbMounted()
	if err != nil {
		return Host{}, err
	}
	return Host{OOMScoreAdjMin: oom, RecursiveReadOnly: rro, Capabilities: caps, UserNamespaces: supportsUserNamespaces(), Hugetlb: hugetlb}, nil
}

// hugetlbMounted: a cgroup v1 hierarchy carries the hugetlb controller,
// or, on a host with no v1 hierarchies (cgroup v2), the unified one offers
// it. A hybrid host's unified hierarchy lists the controllers no v1
// hierarchy took, but runc places containers only in the v1 ones there.
func hugetlbMounted() (bool, error) {
	mounts, err := cgroupfs.HostMounts()
	if err != nil {
		return false, err
	}
	return hugetlbIn(mounts, os.ReadFile), nil
}

func hugetlbIn(mounts []cgroupfs.Mount, readFile func(string) ([]byte, error)) bool {
	v1 := false
	for _, m := range mounts {
		if !m.V2 {
			v1 = true
			if m.Has("hugetlb") {
				return true
			}
		}
	}
	if v1 {
		return false
	}
	for _, m := range mounts {
		data, err := readFile(filepath.Join(m.Dir, "cgroup.controllers"))
		if err == nil && slices.Contains(strings.Fields(string(data)), "hugetlb") {
			return true
		}
	}
	return false
}

// supportsUserNamespaces: user namespaces are enabled and mount_setattr(2)
// exists (Linux 5.12; an empty call fails with EBADF, not ENOSYS).
func supportsUserNamespaces() bool {
	data, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if err != nil {
		return false
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err != nil || n == 0 {
		return false
	}
	err = unix.MountSetattr(-1, "", unix.AT_EMPTY_PATH, &unix.MountAttr{})
	return !errors.Is(err, unix.ENOSYS)
}

func supportsRecursiveReadOnly(ctx context.Context, ociRuntime string) (bool, error) {
	out, err := exec.CommandContext(ctx, ociRuntime, "features").Output()
	if err != nil {
		// Runtimes older than the features command have no rro either.
		if _, ok := err.(*exec.ExitError); ok {
			return false, nil
		}
		return false, fmt.Errorf("%s features: %w", ociRuntime, err)
	}
	var features struct {
		MountOptions []string `json:"mountOptions"`
	}
	if err := json.Unmarshal(out, &features); err != nil {
		return false, fmt.Errorf("%s features: %w", ociRuntime, err)
	}
	return slices.Contains(features.MountOptions, "rro"), nil
}
