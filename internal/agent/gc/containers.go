package gc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's labels on CRI objects, which the agent's pod workers set
// too (internal/agent/pods): which pod and container an object belongs to.
const (
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// CollectContainers makes one pass over the runtime's containers and
// sandboxes:
//   - of a pod that exists, dead instances of each container beyond the
//     newest MaxDeadPerContainer are removed;
//   - of a pod that no longer exists, every container not running is removed;
//   - sandboxes that are not ready and hold no running container are removed
//     if their pod no longer exists or a newer sandbox of the pod does;
//   - the cgroups and log directories of pods that no longer exist and have
//     no sandbox left are removed.
//
// Objects without the pod labels are not the agent's and are left alone.
// Until the pod source knows the node's pods, nothing is done: an empty
// cache would make every pod look deleted.
func (c *Collector) CollectContainers(ctx context.Context) error {
	pods, known := c.cfg.Pods.Pods()
	if !known {
		c.log.Debug("container GC skipped: the node's pods are not known yet")
		return nil
	}
	exists := map[string]bool{}
	for _, p := range pods {
		exists[string(p.UID)] = true
	}
	containers, err := c.listContainers(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ctr := range deadContainers(containers, exists, c.cfg.Policy.MaxDeadPerContainer) {
		if err := c.removeContainer(ctx, ctr); err != nil {
			errs = append(errs, err)
		}
	}
	// Only containers still there (and running) keep a sandbox.
	if containers, err = c.listContainers(ctx); err != nil {
		return errors.Join(append(errs, err)...)
	}
	sandboxes, err := c.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("CRI ListPodSandbox: %w", err))...)
	}
	left := map[string]int{} // pod UID -> its sandboxes not removed
	for _, sb := range sandboxes.GetItems() {
		left[sb.Labels[labelPodUID]]++
	}
	for _, sb := range deadSandboxes(sandboxes.GetItems(), containers, exists) {
		if err := c.removeSandbox(ctx, sb); err != nil {
			errs = append(errs, err)
			continue
		}
		uid := sb.Labels[labelPodUID]
		if left[uid]--; left[uid] == 0 && !exists[uid] {
			// The deleted pod's last sandbox: its cgroup can go.
			if err := c.removePodCgroup(types.UID(uid)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := c.collectPodLogDirs(ctx, exists); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *Collector) listContainers(ctx context.Context) ([]*runtimeapi.Container, error) {
	resp, err := c.cfg.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	return resp.GetContainers(), nil
}

func (c *Collector) removeContainer(ctx context.Context, ctr *runtimeapi.Container) error {
	_, err := c.cfg.Runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr.Id})
	if status.Code(err) == codes.NotFound {
		return nil // the pod's worker removed it meanwhile
	}
	if err != nil {
		return fmt.Errorf("remove dead container %s (%s of pod %s): %w", ctr.Id, ctr.Labels[labelContainerName], ctr.Labels[labelPodUID], err)
	}
	c.log.Info("removed dead container", "id", ctr.Id, "container", ctr.Labels[labelContainerName], "podUID", ctr.Labels[labelPodUID], "attempt", ctr.GetMetadata().GetAttempt())
	c.cfg.Metrics.removed("container")
	return nil
}

func (c *Collector) removeSandbox(ctx context.Context, sb *runtimeapi.PodSandbox) error {
	_, err := c.cfg.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id})
	if status.Code(err) == codes.NotFound {
		return nil // the pod's worker removed it meanwhile
	}
	if err != nil {
		return fmt.Errorf("remove dead sandbox %s of pod %s: %w", sb.Id, sb.Labels[labelPodUID], err)
	}
	c.log.Info("removed dead sandbox", "id", sb.Id, "podUID", sb.Labels[labelPodUID], "attempt", sb.GetMetadata().GetAttempt())
	c.cfg.Metrics.removed("sandbox")
	return nil
}

// deadContainers picks the containers to remove (see CollectContainers).
// A container only created, never started, counts as dead only once its
// pod is gone: the pod's worker may be about to start it.
func deadContainers(all []*runtimeapi.Container, exists map[string]bool, keep int) []*runtimeapi.Container {
	type unit struct{ pod, name string }
	units := map[unit][]*runtimeapi.Container{}
	var out []*runtimeapi.Container
	for _, ctr := range all {
		uid, name := ctr.Labels[labelPodUID], ctr.Labels[labelContainerName]
		switch {
		case uid == "" || name == "" || ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
		case !exists[uid]:
			out = append(out, ctr)
		case ctr.State != runtimeapi.ContainerState_CONTAINER_CREATED:
			units[unit{uid, name}] = append(units[unit{uid, name}], ctr)
		}
	}
	if keep < 0 {
		return out
	}
	for _, dead := range units {
		slices.SortFunc(dead, newestContainerFirst)
		if len(dead) > keep {
			out = append(out, dead[keep:]...)
		}
	}
	return out
}

// newestContainerFirst orders instances by attempt, then creation time.
func newestContainerFirst(a, b *runtimeapi.Container) int {
	if c := cmp.Compare(b.GetMetadata().GetAttempt(), a.GetMetadata().GetAttempt()); c != 0 {
		return c
	}
	return cmp.Compare(b.CreatedAt, a.CreatedAt)
}

// deadSandboxes picks the sandboxes to remove (see CollectContainers).
func deadSandboxes(all []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, exists map[string]bool) []*runtimeapi.PodSandbox {
	running := map[string]bool{} // sandbox ID -> holds a running container
	for _, ctr := range containers {
		if ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running[ctr.PodSandboxId] = true
		}
	}
	byPod := map[string][]*runtimeapi.PodSandbox{}
	for _, sb := range all {
		if uid := sb.Labels[labelPodUID]; uid != "" {
			byPod[uid] = append(byPod[uid], sb)
		}
	}
	var out []*runtimeapi.PodSandbox
	for uid, sbs := range byPod {
		slices.SortFunc(sbs, func(a, b *runtimeapi.PodSandbox) int {
			if c := cmp.Compare(b.GetMetadata().GetAttempt(), a.GetMetadata().GetAttempt()); c != 0 {
				return c
			}
			return cmp.Compare(b.CreatedAt, a.CreatedAt)
		})
		for i, sb := range sbs {
			dead := sb.State != runtimeapi.PodSandboxState_SANDBOX_READY && !running[sb.Id]
			if dead && (!exists[uid] || i > 0) {
				out = append(out, sb)
			}
		}
	}
	return out
}
