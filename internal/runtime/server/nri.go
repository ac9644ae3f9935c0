package server

import (
	"context"

	nriapi "github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// NRI relays lifecycle events to Node Resource Interface plugins
// (internal/runtime/nri). Hooks that may veto an operation (RunPodSandbox,
// CreateContainer, StartContainer, UpdateContainer) fail it on error; the
// others only notify, and their errors are logged.
type NRI interface {
	// BlockSync keeps a connecting plugin from synchronizing until the
	// returned func is called, so no change is missed between its snapshot
	// and its registration.
	BlockSync() (unblock func())
	RunPodSandbox(ctx context.Context, pod *nriapi.PodSandbox) error
	StopPodSandbox(ctx context.Context, pod *nriapi.PodSandbox) error
	RemovePodSandbox(ctx context.Context, pod *nriapi.PodSandbox) error
	// CreateContainer applies the plugins' adjustments to spec.
	CreateContainer(ctx context.Context, pod *nriapi.PodSandbox, ctr *nriapi.Container, spec *specs.Spec) error
	PostCreateContainer(ctx context.Context, pod *nriapi.PodSandbox, ctr *nriapi.Container) error
	StartContainer(ctx context.Context, pod *nriapi.PodSandbox, ctr *nriapi.Container) error
	PostStartContainer(ctx context.Context, pod *nriapi.PodSandbox, ctr *nriapi.Container) error
	// UpdateContainer returns the resources to apply, as plugins amended them.
	UpdateContainer(ctx context.Context, pod *nriapi.PodSandbox, ctr *nriapi.Container, res *specs.LinuxResources) (*specs.LinuxResources, error)
	PostUpdateContainer(ctx context.Context, pod *nriapi.PodSandbox, ctr *nriapi.Container) error
	StopContainer(ctx context.Context, pod *nriapi.PodSandbox, ctr *nriapi.Container) error
	RemoveContainer(ctx context.Context, pod *nriapi.PodSandbox, ctr *nriapi.Container) error
}

// nriPod describes a sandbox to plugins.
func nriPod(sb sandbox) *nriapi.PodSandbox {
	md := sb.Config.GetMetadata()
	pod := &nriapi.PodSandbox{
		Id: sb.ID, Name: md.GetName(), Uid: md.GetUid(), Namespace: md.GetNamespace(),
		Labels: sb.Config.GetLabels(), Annotations: sb.Config.GetAnnotations(),
		RuntimeHandler: sb.RuntimeHandler, Pid: uint32(sb.Pid),
		Linux: &nriapi.LinuxPodSandbox{CgroupParent: sb.Config.GetLinux().GetCgroupParent()},
	}
	if sb.IP != "" {
		pod.Ips = append([]string{sb.IP}, sb.AdditionalIPs...)
	}
	return pod
}

// nriContainer describes a container to plugins; spec, when known (at
// creation), supplies what the runtime generated.
func nriContainer(c container, spec *specs.Spec) *nriapi.Container {
	cfg := c.Config
	out := &nriapi.Container{
		Id: c.ID, PodSandboxId: c.SandboxID, Name: cfg.GetMetadata().GetName(), State: nriState(c.State),
		Labels: cfg.GetLabels(), Annotations: cfg.GetAnnotations(),
		Args:      append(append([]string{}, cfg.GetCommand()...), cfg.GetArgs()...),
		CreatedAt: c.CreatedAt, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt, ExitCode: c.ExitCode,
		StatusReason: c.Reason, StatusMessage: c.Message,
	}
	for _, kv := range cfg.GetEnvs() {
		out.Env = append(out.Env, kv.GetKey()+"="+string(kv.GetValue()))
	}
	if spec != nil {
		if spec.Process != nil {
			out.Args, out.Env = spec.Process.Args, spec.Process.Env
		}
		out.Mounts = nriapi.FromOCIMounts(spec.Mounts)
		out.Hooks = nriapi.FromOCIHooks(spec.Hooks)
		if l := spec.Linux; l != nil {
			out.Linux = &nriapi.LinuxContainer{
				Namespaces:  nriapi.FromOCILinuxNamespaces(l.Namespaces),
				Devices:     nriapi.FromOCILinuxDevices(l.Devices),
				Resources:   nriapi.FromOCILinuxResources(l.Resources, nil),
				CgroupsPath: l.CgroupsPath,
			}
		}
	}
	return out
}

func nriState(s runtimeapi.ContainerState) nriapi.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return nriapi.ContainerState_CONTAINER_CREATED
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return nriapi.ContainerState_CONTAINER_RUNNING
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return nriapi.ContainerState_CONTAINER_STOPPED
	}
	return nriapi.ContainerState_CONTAINER_UNKNOWN
}

// nriNotify runs a notification hook for a container, logging its error:
// the event has happened whatever a plugin answers.
func (s *Server) nriNotify(ctx context.Context, event string, c container, hook func(context.Context, *nriapi.PodSandbox, *nriapi.Container) error) {
	sb, err := s.sandboxes.get(c.SandboxID)
	if err != nil {
		return
	}
	if err := hook(ctx, nriPod(sb), nriContainer(c, nil)); err != nil {
		s.log.Warn("NRI "+event, "id", c.ID, "err", err)
	}
}

// nriHost is the runtime side NRI synchronizes plugins against.
type nriHost struct{ s *Server }

// NRIHost returns what the NRI service needs from the server.
func (s *Server) NRIHost() interface {
	Snapshot(ctx context.Context) ([]*nriapi.PodSandbox, []*nriapi.Container)
	UpdateContainers(ctx context.Context, updates []*nriapi.ContainerUpdate) ([]*nriapi.ContainerUpdate, error)
} {
	return nriHost{s}
}

// Snapshot lists every sandbox and container the runtime holds, in any
// state, as containerd hands them to a synchronizing plugin.
func (h nriHost) Snapshot(ctx context.Context) ([]*nriapi.PodSandbox, []*nriapi.Container) {
	var pods []*nriapi.PodSandbox
	var ctrs []*nriapi.Container
	for _, sb := range h.s.sandboxes.list() {
		pods = append(pods, nriPod(sb))
	}
	for _, c := range h.s.containers.list() {
		ctrs = append(ctrs, nriContainer(c, nil))
	}
	return pods, ctrs
}

// UpdateContainers applies plugins' resource updates to containers (to
// the spec of one not started yet); it returns those that failed.
func (h nriHost) UpdateContainers(ctx context.Context, updates []*nriapi.ContainerUpdate) ([]*nriapi.ContainerUpdate, error) {
	var failed []*nriapi.ContainerUpdate
	for _, u := range updates {
		res := u.GetLinux().GetResources()
		if res == nil {
			continue
		}
		err := h.updateContainer(ctx, u.GetContainerId(), res.ToOCI())
		if err != nil {
			h.s.log.Warn("NRI container update", "id", u.GetContainerId(), "err", err)
			if !u.GetIgnoreFailure() {
				failed = append(failed, u)
			}
		}
	}
	return failed, nil
}

func (h nriHost) updateContainer(ctx context.Context, id string, res *specs.LinuxResources) error {
	unlock := h.s.locks.Lock(id)
	defer unlock()
	c, err := h.s.containers.get(id)
	if err != nil {
		return err
	}
	return h.s.applyResources(ctx, c, res)
}

// noNRI is the NRI of a runtime without plugins.
type noNRI struct{}

func (noNRI) BlockSync() func()                                          { return func() {} }
func (noNRI) RunPodSandbox(context.Context, *nriapi.PodSandbox) error    { return nil }
func (noNRI) StopPodSandbox(context.Context, *nriapi.PodSandbox) error   { return nil }
func (noNRI) RemovePodSandbox(context.Context, *nriapi.PodSandbox) error { return nil }
func (noNRI) CreateContainer(context.Context, *nriapi.PodSandbox, *nriapi.Container, *specs.Spec) error {
	return nil
}
func (noNRI) PostCreateContainer(context.Context, *nriapi.PodSandbox, *nriapi.Container) error {
	return nil
}
func (noNRI) StartContainer(context.Context, *nriapi.PodSandbox, *nriapi.Container) error { return nil }
func (noNRI) PostStartContainer(context.Context, *nriapi.PodSandbox, *nriapi.Container) error {
	return nil
}
func (noNRI) UpdateContainer(_ context.Context, _ *nriapi.PodSandbox, _ *nriapi.Container, res *specs.LinuxResources) (*specs.LinuxResources, error) {
	return res, nil
}
func (noNRI) PostUpdateContainer(context.Context, *nriapi.PodSandbox, *nriapi.Container) error {
	return nil
}
func (noNRI) StopContainer(context.Context, *nriapi.PodSandbox, *nriapi.Container) error { return nil }
func (noNRI) RemoveContainer(context.Context, *nriapi.PodSandbox, *nriapi.Container) error {
	return nil
}
