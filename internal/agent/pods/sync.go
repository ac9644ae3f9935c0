package pods

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
)

// Upstream waiting reasons for containers.
const (
	reasonContainerCreating   = "ContainerCreating"
	reasonPodInitializing     = "PodInitializing"
	reasonCrashLoopBackOff    = "CrashLoopBackOff"
	reasonCreateConfigError   = "CreateContainerConfigError"
	reasonCreateContainerErr  = "CreateContainerError"
	reasonRunContainerError   = "RunContainerError"
	reasonCreatePodSandboxErr = "CreatePodSandboxError"
)

// syncResult tells the worker what to do next.
type syncResult struct {
	done         bool          // the pod is gone and cleaned up: stop the worker
	requeueAfter time.Duration // sync again this soon (a back-off ending)
}

// waiting is why a container is not running right now.
type waiting struct{ reason, message string }

// syncRun is the state of one sync of a live pod.
type syncRun struct {
	m        *Manager
	pod      *corev1.Pod
	state    podState
	sandbox  *runtimeapi.PodSandbox
	sbConfig *runtimeapi.PodSandboxConfig
	volumes  map[string]string // volume name -> host path
	// imagePulls are the image volumes pulled in this sync, by name.
	imagePulls map[string]imageVolumePull
	waiting    map[string]waiting
	requeue    time.Duration
	// resize is what applying the pod's allocation came to.
	resize resizeActuation
}

// syncPod converges the runtime to pod (nil: the pod is gone from the API).
func (m *Manager) syncPod(ctx context.Context, uid types.UID, pod *corev1.Pod) (syncResult, error) {
	st, err := observe(ctx, m.rt, string(uid))
	if err != nil {
		return syncResult{}, err
	}
	switch {
	case pod == nil:
		return m.cleanup(ctx, uid, st)
	case pod.DeletionTimestamp != nil:
		return m.terminate(ctx, pod, st)
	case isTerminal(pod.Status.Phase):
		// A finished pod's containers stay as they are; only stop its sandbox.
		m.stopSandboxes(ctx, st)
		return syncResult{}, nil
	}
	if len(st.sandboxes) == 0 && len(st.containers) == 0 {
		// Not started yet: the node's admission decides whether it ever is.
		if r := m.admit(pod); r != nil {
			return syncResult{}, m.reject(ctx, pod, r)
		}
	}
	// From here on the pod is as the node runs it: its containers'
	// resources as allocated, a resize of its spec applied once admitted.
	pod, pending, err := m.allocate(ctx, pod)
	if err != nil {
		return syncResult{}, err
	}
	left, hasDeadline := m.untilDeadline(pod)
	if hasDeadline && left <= 0 {
		return m.failPastDeadline(ctx, pod, st)
	}
	s := &syncRun{m: m, pod: pod, state: st, waiting: map[string]waiting{}}
	if hasDeadline {
		s.requeueIn(left)
	}
	if err := s.ensureSandbox(ctx); err != nil {
		s.waitAll(reasonContainerCreating, err.Error())
	} else if s.volumes, err = m.prepareVolumes(ctx, pod); err != nil {
		m.event(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for "+err.Error())
		s.waitAll(reasonContainerCreating, "MountVolume.SetUp failed for "+err.Error())
		s.requeueIn(backoffInitial)
	} else {
		// Before the init containers, as the kubelet: a pod stuck
		// initializing can still be debugged.
		s.runEphemeralContainers(ctx)
		if s.runInitContainers(ctx) {
			s.runContainers(ctx)
		}
		s.actuateResize(ctx)
		if s.state, err = observe(ctx, m.rt, string(uid)); err != nil {
			return syncResult{}, err
		}
	}
	status, err := m.podStatus(ctx, pod, s.state, s.waiting)
	if err != nil {
		return syncResult{}, err
	}
	status.Conditions = append(status.Conditions, resizeConditions(pod, pending, s.resize, metav1.NewTime(m.clock.Now().Truncate(time.Second)))...)
	if err := m.patchStatus(ctx, pod, status); err != nil {
		return syncResult{requeueAfter: s.requeue}, err
	}
	if isTerminal(status.Phase) {
		m.prober.stopPod(pod.UID)
		m.stopSandboxes(ctx, s.state)
	} else {
		m.prober.sync(ctx, pod, runningIDs(s.state), status.PodIP)
	}
	return syncResult{requeueAfter: s.requeue}, nil
}

// runningIDs maps container names to their running instance's ID.
func runningIDs(st podState) map[string]string {
	ids := map[string]string{}
	for name := range st.containers {
		if l := st.latest(name); l.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			ids[name] = l.Id
		}
	}
	return ids
}

func isTerminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }

func (s *syncRun) waitAll(reason, message string) {
	for _, c := range s.pod.Spec.InitContainers {
		s.waiting[c.Name] = waiting{reason, message}
	}
	for _, c := range s.pod.Spec.Containers {
		s.waiting[c.Name] = waiting{reason, message}
	}
}

// ensureSandbox uses the ready sandbox or starts a new attempt, after
// stopping and removing any dead one (and so its containers).
func (s *syncRun) ensureSandbox(ctx context.Context) error {
	if sb := s.state.readySandbox(); sb != nil {
		cfg, err := s.m.sandboxConfig(s.pod, sb.Metadata.Attempt)
		s.sandbox, s.sbConfig = sb, cfg
		return err
	}
	var attempt uint32
	if len(s.state.sandboxes) > 0 {
		attempt = s.state.sandboxes[0].Metadata.Attempt + 1
		s.m.stopSandboxes(ctx, s.state)
		s.m.removeSandboxes(ctx, s.state)
		s.state.containers = map[string][]*runtimeapi.ContainerStatus{}
	}
	cfg, err := s.m.sandboxConfig(s.pod, attempt)
	if err != nil {
		return err
	}
	handler, err := s.m.runtimeHandler(s.pod)
	if err != nil {
		return s.sandboxFailed(err)
	}
	if err := s.m.checkRuntimeUserns(ctx, s.pod, handler); err != nil {
		return s.sandboxFailed(err)
	}
	resp, err := s.m.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
	if err != nil {
		return s.sandboxFailed(err)
	}
	s.sandbox = &runtimeapi.PodSandbox{Id: resp.PodSandboxId, Metadata: cfg.Metadata, State: runtimeapi.PodSandboxState_SANDBOX_READY}
	s.sbConfig = cfg
	s.state.sandboxes = append([]*runtimeapi.PodSandbox{s.sandbox}, s.state.sandboxes...)
	return nil
}

// sandboxFailed reports a sandbox that could not be made, as an event and
// as the pod's waiting message, and retries after the initial back-off.
func (s *syncRun) sandboxFailed(err error) error {
	s.m.event(s.pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error())
	s.requeue = backoffInitial
	return fmt.Errorf("%s: %w", reasonCreatePodSandboxErr, err)
}

// runInitContainers runs the init containers one at a time, in order, and
// reports whether the pod is initialized: every regular init container
// succeeded and every sidecar (restartPolicy Always) has started. A sidecar
// keeps running beside the containers and is restarted whenever it exits.
func (s *syncRun) runInitContainers(ctx context.Context) bool {
	for i := range s.pod.Spec.InitContainers {
		c := &s.pod.Spec.InitContainers[i]
		sidecar := podutil.IsRestartableInitContainer(c)
		latest := s.state.latest(c.Name)
		switch {
		case latest == nil:
			s.start(ctx, startSpec{c: c, init: true}, 0)
		case sidecar && latest.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
			if s.m.probeOK(latest.Id, c.StartupProbe, startup) {
				continue
			}
		case !sidecar && latest.State == runtimeapi.ContainerState_CONTAINER_EXITED && latest.ExitCode == 0:
			continue
		case latest.State == runtimeapi.ContainerState_CONTAINER_EXITED:
			// A sidecar always restarts; an init container by its own
			// restart policy and rules, else the pod's.
			if podutil.ContainerShouldRestart(*c, s.pod.Spec, latest.ExitCode) {
				s.restart(ctx, c, true, latest)
			}
			if sidecar && s.anyContainerStarted() {
				continue // initialized already: the containers go on meanwhile
			}
		case latest.State == runtimeapi.ContainerState_CONTAINER_CREATED:
			s.startCreated(ctx, c, latest)
		}
		for _, rest := range s.pod.Spec.Containers {
			s.waiting[rest.Name] = waiting{reason: reasonPodInitializing}
		}
		return false
	}
	return true
}

// anyContainerStarted reports whether a regular container ever ran: the pod
// was initialized once, and a sidecar's restart does not undo that.
func (s *syncRun) anyContainerStarted() bool {
	for _, c := range s.pod.Spec.Containers {
		if s.state.latest(c.Name) != nil {
			return true
		}
	}
	return false
}

func (s *syncRun) runContainers(ctx context.Context) {
	for i := range s.pod.Spec.Containers {
		c := &s.pod.Spec.Containers[i]
		latest := s.state.latest(c.Name)
		switch {
		case latest == nil:
			s.start(ctx, startSpec{c: c}, 0)
		case latest.State == runtimeapi.ContainerState_CONTAINER_CREATED:
			s.startCreated(ctx, c, latest)
		case latest.State == runtimeapi.ContainerState_CONTAINER_EXITED && podutil.ContainerShouldRestart(*c, s.pod.Spec, latest.ExitCode):
			s.restart(ctx, c, false, latest)
		case latest.State == runtimeapi.ContainerState_CONTAINER_RUNNING && specChanged(c, latest):
			s.replace(ctx, c, latest, fmt.Sprintf("Container %s definition changed, will be restarted", c.Name))
		}
	}
}

// containersAndSidecars are the pod's containers and its sidecars
// (restartable init containers): those that run beside each other, whose
// probes the kubelet runs and which a resize changes while they run.
func containersAndSidecars(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		if podutil.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// containerHash is the kubelet's hash of what of a container's spec may
// change in a running pod (its image), as the kubelet annotates it.
func containerHash(c *corev1.Container) string {
	return strconv.FormatUint(kubecontainer.HashContainer(c), 16)
}

// specChanged reports whether a running container was created from another
// spec than c's. A container without the annotation (created before the
// agent wrote it) is taken as current.
func specChanged(c *corev1.Container, latest *runtimeapi.ContainerStatus) bool {
	h, ok := latest.GetAnnotations()[annotationHash]
	return ok && h != containerHash(c)
}

// replace stops a running container whose spec changed (or whose resize
// needs a restart) and starts its next attempt from the new spec at once,
// whatever the restart policy, as the kubelet does; why is the Killing
// event's message.
func (s *syncRun) replace(ctx context.Context, c *corev1.Container, latest *runtimeapi.ContainerStatus, why string) {
	s.m.event(s.pod, corev1.EventTypeNormal, "Killing", why)
	if _, err := s.m.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: latest.Id, Timeout: gracePeriod(s.pod)}); err != nil {
		s.m.log.Warn("stop changed container", "id", latest.Id, "err", err)
		s.requeueIn(time.Second)
		return
	}
	s.start(ctx, startSpec{c: c}, latest.Metadata.Attempt+1)
}

// restart starts the next attempt of an exited container unless it is
// backing off (CrashLoopBackOff).
func (s *syncRun) restart(ctx context.Context, c *corev1.Container, init bool, latest *runtimeapi.ContainerStatus) {
	key := string(s.pod.UID) + "/container/" + c.Name
	if remaining, delay, backingOff := s.m.backoff.Waiting(key); backingOff {
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.Name, s.pod.Name, s.pod.Namespace, s.pod.UID)
		s.waiting[c.Name] = waiting{reasonCrashLoopBackOff, msg}
		s.m.event(s.pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container "+c.Name)
		s.requeueIn(remaining)
		return
	}
	s.requeueIn(s.m.backoff.Next(key))
	s.start(ctx, startSpec{c: c, init: init}, latest.Metadata.Attempt+1)
}

func (s *syncRun) requeueIn(d time.Duration) {
	if s.requeue == 0 || d < s.requeue {
		s.requeue = d
	}
}

// runEphemeralContainers starts each ephemeral container the runtime has no
// instance of, in the pod's sandbox as it is; one that ran is never started
// again, whether it exited or went with a replaced sandbox (the API status
// remembers it ran: the kubelet keeps its dead instance in the runtime).
func (s *syncRun) runEphemeralContainers(ctx context.Context) {
	reported := s.m.sent.get(s.pod.UID, s.pod.Status).EphemeralContainerStatuses
	for i := range s.pod.Spec.EphemeralContainers {
		ec := &s.pod.Spec.EphemeralContainers[i]
		if s.state.latest(ec.Name) != nil {
			continue
		}
		if old, ok := podutil.GetContainerStatus(reported, ec.Name); ok && old.ContainerID != "" {
			continue
		}
		s.start(ctx, startSpec{c: (*corev1.Container)(&ec.EphemeralContainerCommon), ephemeral: ec}, 0)
	}
}

// startSpec is what start needs of a container: the container itself, as
// an init container or not, and for an ephemeral container its own spec
// (the kubelet's startSpec).
type startSpec struct {
	c         *corev1.Container
	init      bool
	ephemeral *corev1.EphemeralContainer
}

// targetID is the ID of the container whose namespaces an ephemeral
// container targets ("" for none): its newest instance, in whatever state,
// as the kubelet resolves it.
func (sp startSpec) targetID(st podState) (string, error) {
	if sp.ephemeral == nil || sp.ephemeral.TargetContainerName == "" {
		return "", nil
	}
	target := st.latest(sp.ephemeral.TargetContainerName)
	if target == nil {
		return "", fmt.Errorf("unable to find target container %v", sp.ephemeral.TargetContainerName)
	}
	return target.Id, nil
}

// imageFailed makes an image that could not be made present (the
// container's own or an image volume's) c's waiting reason, and syncs
// again when its pull back-off ends.
func (s *syncRun) imageFailed(c *corev1.Container, err error) {
	var ie imageError
	if !errors.As(err, &ie) {
		s.waiting[c.Name] = waiting{reasonErrImagePull, err.Error()}
		return
	}
	s.waiting[c.Name] = waiting{ie.reason, ie.Error()}
	if remaining, _, ok := s.m.backoff.Waiting(imageBackoffKey(s.pod.UID, ie.image)); ok {
		s.requeueIn(remaining)
	}
}

// start pulls the container's image and creates and starts its attempt-th
// instance. Failures become the container's waiting reason.
func (s *syncRun) start(ctx context.Context, sp startSpec, attempt uint32) {
	c := sp.c
	image, err := s.m.ensureImage(ctx, s.pod, c, s.sbConfig)
	if err != nil {
		s.imageFailed(c, err)
		return
	}
	imageVolumes, err := s.imageVolumes(ctx, c)
	if err != nil {
		s.imageFailed(c, err)
		return
	}
	target, err := sp.targetID(s.state)
	if err != nil {
		s.waiting[c.Name] = waiting{reasonCreateConfigError, err.Error()}
		s.m.event(s.pod, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		return
	}
	cfg, err := s.m.containerConfig(ctx, s.podAsStarted(ctx), c, sp.init, target, attempt, image, containerVolumes{s.volumes, imageVolumes})
	if err != nil {
		s.waiting[c.Name] = waiting{reasonCreateConfigError, err.Error()}
		s.m.event(s.pod, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		return
	}
	resp, err := s.m.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: s.sandbox.Id, Config: cfg, SandboxConfig: s.sbConfig})
	if err != nil {
		s.waiting[c.Name] = waiting{reasonCreateContainerErr, err.Error()}
		s.m.event(s.pod, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		return
	}
	s.m.event(s.pod, corev1.EventTypeNormal, "Created", "Created container "+c.Name)
	if _, err := s.m.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId}); err != nil {
		s.waiting[c.Name] = waiting{reasonRunContainerError, err.Error()}
		s.m.event(s.pod, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		return
	}
	s.m.event(s.pod, corev1.EventTypeNormal, "Started", "Started container "+c.Name)
	s.postStart(ctx, c, resp.ContainerId)
	s.pruneOld(ctx, c.Name)
}

// podAsStarted is the pod with its sandbox's IPs in its status, which the
// API object gets only with the next status write: the downward API of the
// container about to start reads them, as the kubelet passes them in.
func (s *syncRun) podAsStarted(ctx context.Context) *corev1.Pod {
	if s.pod.Spec.HostNetwork {
		pod := *s.pod
		pod.Status.PodIP, pod.Status.PodIPs = s.m.cfg.NodeIP, []corev1.PodIP{{IP: s.m.cfg.NodeIP}}
		return &pod
	}
	resp, err := s.m.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: s.sandbox.Id})
	ips := sandboxIPs(resp.GetStatus().GetNetwork())
	if err != nil || len(ips) == 0 {
		return s.pod
	}
	pod := *s.pod
	pod.Status.PodIP, pod.Status.PodIPs = ips[0].IP, ips
	return &pod
}

// startCreated starts a container the runtime created but never started
// (the agent stopped between the two calls).
func (s *syncRun) startCreated(ctx context.Context, c *corev1.Container, latest *runtimeapi.ContainerStatus) {
	if _, err := s.m.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: latest.Id}); err != nil {
		s.waiting[c.Name] = waiting{reasonRunContainerError, err.Error()}
		return
	}
	s.m.event(s.pod, corev1.EventTypeNormal, "Started", "Started container "+c.Name)
}

// pruneOld removes dead instances of a container older than the one just
// replaced: the previous one stays for lastState and `logs --previous`.
func (s *syncRun) pruneOld(ctx context.Context, name string) {
	instances := s.state.containers[name]
	for i := 1; i < len(instances); i++ {
		if _, err := s.m.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: instances[i].Id}); err != nil {
			s.m.log.Warn("remove old container", "id", instances[i].Id, "err", err)
		}
	}
}
