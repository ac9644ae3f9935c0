package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// collectPodLogDirs removes the log directories (PodLogDir/NS_NAME_UID, as
// the pod workers name them) of pods that no longer exist and of which the
// runtime holds no sandbox any more: the runtime removes a container's log
// file with the container at most, never the pod's directory.
func (c *Collector) collectPodLogDirs(ctx context.Context, exists map[string]bool) error {
	if c.cfg.PodLogDir == "" {
		return nil
	}
	entries, err := os.ReadDir(c.cfg.PodLogDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pod log directories: %w", err)
	}
	sandboxes, err := c.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	inRuntime := sandboxPodUIDs(sandboxes.GetItems())
	var errs []error
	for _, e := range entries {
		uid := podLogDirUID(e.Name())
		if !e.IsDir() || uid == "" || exists[uid] || inRuntime[uid] {
			continue
		}
		dir := filepath.Join(c.cfg.PodLogDir, e.Name())
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove pod log directory: %w", err))
			continue
		}
		c.log.Info("removed log directory of a deleted pod", "path", dir)
		c.cfg.Metrics.removed("log-directory")
	}
	return errors.Join(errs...)
}

// podLogDirUID is the pod UID in a log directory's name NS_NAME_UID, or ""
// when the name has another shape (not the agent's: left alone).
// Namespaces and pod names are DNS names, which never hold '_'.
func podLogDirUID(name string) string {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return ""
	}
	return parts[2]
}

// sandboxPodUIDs are the pods the sandboxes belong to, by the pod UID label
// or the sandbox metadata's UID.
func sandboxPodUIDs(sandboxes []*runtimeapi.PodSandbox) map[string]bool {
	out := map[string]bool{}
	for _, sb := range sandboxes {
		out[sb.GetMetadata().GetUid()] = true
		out[sb.Labels[labelPodUID]] = true
	}
	return out
}
