package gc

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CollectPodCgroups removes the cgroups of orphaned pods: those under the
// agent's QoS parents whose pod the agent does not have and of which the
// runtime holds no sandbox (left by a crash, by a removal that found the
// cgroup still busy, or by an agent that never removed them). A cgroup
// still in use stays. It returns false, doing nothing, until the pod
// source knows the node's pods.
func (c *Collector) CollectPodCgroups(ctx context.Context) (bool, error) {
	if c.cfg.Cgroups == nil {
		return true, nil
	}
	// The directories are read before the pods and the sandboxes: a pod
	// whose cgroup is seen is then already in the informer's cache (its
	// worker creates the cgroup, through the runtime, only after) or,
	// deleted meanwhile, still has its sandbox until its cgroup may go.
	uids, err := c.cfg.Cgroups.PodUIDs()
	if err != nil {
		return true, err
	}
	pods, known := c.cfg.Pods.Pods()
	if !known {
		c.log.Debug("pod cgroup sweep skipped: the node's pods are not known yet")
		return false, nil
	}
	if len(uids) == 0 {
		return true, nil
	}
	sandboxes, err := c.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return true, fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	keep := sandboxPodUIDs(sandboxes.GetItems())
	for _, p := range pods {
		keep[string(p.UID)] = true
	}
	var errs []error
	for _, uid := range uids {
		if keep[string(uid)] {
			continue
		}
		if err := c.removePodCgroup(uid); err != nil {
			errs = append(errs, err)
		}
	}
	return true, errors.Join(errs...)
}

// removePodCgroup removes the cgroup of pod uid, gone with its sandboxes.
func (c *Collector) removePodCgroup(uid types.UID) error {
	removed, err := c.cfg.Cgroups.RemovePod(uid)
	if removed > 0 {
		c.log.Info("removed cgroup of a deleted pod", "podUID", uid, "directories", removed)
		c.cfg.Metrics.removed("pod-cgroup")
	}
	return err
}
