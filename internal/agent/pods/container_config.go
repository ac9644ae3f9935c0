package pods

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerConfig builds the CRI container for c's attempt-th run. target,
// when not "", is the ID of the container an ephemeral container targets.
func (m *Manager) containerConfig(ctx context.Context, pod *corev1.Pod, c *corev1.Container, init bool, target string, attempt uint32, image string, volumes containerVolumes) (*runtimeapi.ContainerConfig, error) {
	env, err := m.envFor(ctx, pod, c)
	if err != nil {
		return nil, err
	}
	mounts, err := m.volumeMounts(pod, c, volumes, envMap(env))
	if err != nil {
		return nil, configError{err}
	}
	hosts, err := m.hostsMount(pod, c)
	if err != nil {
		return nil, err
	}
	if hosts != nil {
		mounts = append(mounts, hosts)
	}
	uid, username, err := m.imageUser(ctx, c.Image)
	if err != nil {
		return nil, err
	}
	if err := verifyRunAsNonRoot(pod, c, uid, username); err != nil {
		return nil, err
	}
	security, err := m.containerSecurity(pod, c, uid, username)
	if err != nil {
		return nil, err
	}
	userns, err := m.userNamespace(pod)
	if err != nil {
		return nil, err
	}
	security.NamespaceOptions.UsernsOptions = userns
	// As the kubelet: an ephemeral container joins its target's PID
	// namespace unless the pod's containers share one (or the host's).
	if target != "" && security.NamespaceOptions.Pid == runtimeapi.NamespaceMode_CONTAINER {
		security.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		security.NamespaceOptions.TargetId = target
	}
	labels := podLabels(string(pod.UID), pod.Name, pod.Namespace)
	labels[labelContainerName] = c.Name
	annotations := map[string]string{
		annotationRestartCount: strconv.FormatUint(uint64(attempt), 10),
		annotationGracePeriod:  strconv.FormatInt(gracePeriod(pod), 10),
		annotationHash:         containerHash(c),
	}
	if init {
		annotations[annotationInit] = "true"
	}
	if c.TerminationMessagePath != "" {
		host, err := m.terminationMessageFile(pod, c.Name, attempt)
		if err != nil {
			return nil, err
		}
		annotations[annotationTerminationMessagePath] = c.TerminationMessagePath
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: host})
	}
	if userns != nil {
		// As the kubelet does: the runtime idmaps each volume through the
		// pod's mappings, so the files the agent made as root are the
		// pod's root's, and what that root writes is the host's root's.
		for _, mt := range mounts {
			mt.UidMappings, mt.GidMappings = userns.Uids, userns.Gids
		}
	}
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: attempt},
		Image:       &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, envMap(env)),
		Args:        expandAll(c.Args, envMap(env)),
		WorkingDir:  c.WorkingDir,
		Envs:        env,
		Mounts:      mounts,
		Labels:      labels,
		Annotations: annotations,
		LogPath:     filepath.Join(c.Name, fmt.Sprintf("%d.log", attempt)),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(c),
			SecurityContext: security,
		},
	}, nil
}

// terminationMessageFile creates the host file the container's
// terminationMessagePath is bound to.
func (m *Manager) terminationMessageFile(pod *corev1.Pod, name string, attempt uint32) (string, error) {
	dir := filepath.Join(m.cfg.DataDir, "pods", string(pod.UID), "containers", name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("termination message dir: %w", err)
	}
	path := filepath.Join(dir, strconv.FormatUint(uint64(attempt), 10)+".termination-log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
	if err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	// Writable by the container's user whoever it is, whatever the
	// agent's umask, as the kubelet makes it.
	if err := os.Chmod(path, 0o666); err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	return path, nil
}

// CPU period and the kubelet's share conversion (cgroup v1 shares).
const (
	cpuPeriod  = 100000
	minShares  = 2
	sharesUnit = 1024
)

func linuxResources(c *corev1.Container) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{CpuShares: minShares}
	if req, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		r.CpuShares = max(minShares, milliCPU(req)*sharesUnit/1000)
	} else if lim, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		r.CpuShares = max(minShares, milliCPU(lim)*sharesUnit/1000)
	}
	if lim, ok := c.Resources.Limits[corev1.ResourceCPU]; ok && milliCPU(lim) > 0 {
		// The kubelet's MilliCPUToQuota: no quota below 1 ms per period.
		r.CpuPeriod = cpuPeriod
		r.CpuQuota = max(minQuota, milliCPU(lim)*cpuPeriod/1000)
	}
	if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = lim.Value()
	}
	return r
}

// gracePeriod is the pod's termination grace period in seconds: the
// deletion's when the pod is being deleted, else the spec's (default 30).
func gracePeriod(pod *corev1.Pod) int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return 30
}

func envMap(env []*runtimeapi.KeyValue) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		m[kv.Key] = string(kv.Value)
	}
	return m
}
