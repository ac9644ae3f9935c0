package spec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
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
	return Host{OOMScoreAdjMin: oom, RecursiveReadOnly: rro, Capabilities: caps, UserNamespaces: supportsUserNamespaces()}, nil
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
