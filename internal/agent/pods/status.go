package pods

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	kubeletstatus "k8s.io/kubernetes/pkg/kubelet/status"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/berth/berth/internal/agent/crilog"
)

// maxTerminationMessage is the kubelet's limit on a termination message.
const maxTerminationMessage = 4096

// podStatus computes the pod's status from what the runtime holds and why
// containers are waiting. Times of unchanged conditions carry over.
func (m *Manager) podStatus(ctx context.Context, pod *corev1.Pod, st podState, why map[string]waiting) (corev1.PodStatus, error) {
	pod = m.allocs.cached(pod.UID).apply(pod)
	now := metav1.NewTime(m.clock.Now().Truncate(time.Second))
	status := corev1.PodStatus{
		QOSClass:  qosClass(pod),
		HostIP:    m.cfg.NodeIP,
		StartTime: pod.Status.StartTime,
	}
	if m.cfg.NodeIP != "" {
		status.HostIPs = []corev1.HostIP{{IP: m.cfg.NodeIP}}
	}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	sandboxReady := st.readySandbox() != nil
	if sb := st.readySandbox(); sb != nil && !pod.Spec.HostNetwork {
		resp, err := m.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.Id})
		if err != nil {
			return status, fmt.Errorf("sandbox status %s: %w", sb.Id, err)
		}
		if ips := sandboxIPs(resp.Status.GetNetwork()); len(ips) > 0 {
			status.PodIP, status.PodIPs = ips[0].IP, ips
		}
	} else if pod.Spec.HostNetwork && sandboxReady {
		status.PodIP, status.PodIPs = m.cfg.NodeIP, []corev1.PodIP{{IP: m.cfg.NodeIP}}
	}
	for _, c := range pod.Spec.InitContainers {
		status.InitContainerStatuses = append(status.InitContainerStatuses, m.containerStatus(pod, &c, st, why[c.Name], true))
	}
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, m.containerStatus(pod, &c, st, why[c.Name], false))
	}
	status.EphemeralContainerStatuses = m.ephemeralStatuses(pod, st, why)
	status.Phase = phase(pod, status)
	status.Conditions = conditions(pod, status, sandboxReady, now)
	return status, nil
}

func (m *Manager) containerStatus(pod *corev1.Pod, c *corev1.Container, st podState, why waiting, init bool) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	latest := st.latest(c.Name)
	if latest == nil {
		reason := why.reason
		if reason == "" {
			reason = reasonContainerCreating
			if init || len(pod.Spec.InitContainers) > 0 && !initDone(st, pod) {
				reason = reasonPodInitializing
			}
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: why.message}
		// As the kubelet's prober manager, every container's status says
		// whether it started, a waiting one's too.
		cs.Started = new(false)
		return cs
	}
	cs.RestartCount = int32(latest.Metadata.Attempt)
	cs.ImageID = latest.ImageRef
	cs.ContainerID = m.cfg.RuntimeName + "://" + latest.Id
	cs.State = m.state(pod, c, latest)
	// What the node allocated the container and what the runtime applied.
	cs.AllocatedResources = c.Resources.Requests.DeepCopy()
	cs.Resources = statusResources(c, latest)
	if prev := st.previous(c.Name); prev != nil && prev.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		cs.LastTerminationState = m.state(pod, c, prev)
	}
	if why.reason != "" && latest.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		// Waiting to be restarted: the exit becomes the last state.
		cs.LastTerminationState = cs.State
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: why.reason, Message: why.message}}
	}
	running := cs.State.Running != nil
	// A container has started once running and past its startup probe; it
	// is ready once started and its readiness probe (if any) succeeded. An
	// init container is ready once it succeeded.
	started := running && m.probeOK(latest.Id, c.StartupProbe, startup)
	cs.Started = &started
	cs.Ready = started && m.probeOK(latest.Id, c.ReadinessProbe, readiness)
	if init && !podutil.IsRestartableInitContainer(c) {
		cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
	}
	return cs
}

// ephemeralStatuses are the statuses of the pod's ephemeral containers, as
// the kubelet reports them: each as a container's, with no probes run (never
// started, never ready), sorted by name. One that ran but that the runtime
// no longer holds (removed with a replaced sandbox, or collected) keeps its
// last terminated status, or if it was running then, is reported
// terminated as the kubelet reports a container it cannot locate.
func (m *Manager) ephemeralStatuses(pod *corev1.Pod, st podState, why map[string]waiting) []corev1.ContainerStatus {
	reported := m.sent.get(pod.UID, pod.Status).EphemeralContainerStatuses
	var out []corev1.ContainerStatus
	for i := range pod.Spec.EphemeralContainers {
		c := (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if old, ok := podutil.GetContainerStatus(reported, c.Name); ok && old.ContainerID != "" && st.latest(c.Name) == nil {
			if old.State.Terminated == nil {
				old.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason:   "ContainerStatusUnknown",
					Message:  "The container could not be located when the pod was terminated",
					ExitCode: 137,
				}}
			}
			out = append(out, old)
			continue
		}
		cs := m.containerStatus(pod, c, st, why[c.Name], false)
		cs.Started, cs.Ready = nil, false
		out = append(out, cs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (m *Manager) probeOK(id string, probe *corev1.Probe, kind probeKind) bool {
	if probe == nil {
		return true
	}
	ok, _ := m.prober.result(id, kind)
	return ok
}

// initDone reports whether every regular init container succeeded and
// every sidecar runs.
func initDone(st podState, pod *corev1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		l := st.latest(c.Name)
		switch {
		case l == nil:
			return false
		case podutil.IsRestartableInitContainer(c):
			if l.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				return false
			}
		case l.State != runtimeapi.ContainerState_CONTAINER_EXITED || l.ExitCode != 0:
			return false
		}
	}
	return true
}

// initPending lists the init containers that keep the pod from being
// initialized, as the kubelet judges: a regular one until it succeeded, a
// sidecar until it started.
func initPending(pod *corev1.Pod, st corev1.PodStatus) []string {
	var pending []string
	for i, ic := range st.InitContainerStatuses {
		done := ic.Ready
		if podutil.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			done = ic.Started != nil && *ic.Started
		}
		if !done {
			pending = append(pending, ic.Name)
		}
	}
	return pending
}

// anyRegularContainerStarted reports whether a container of the pod (not
// an init container) ever ran: past initialization, however its sidecars
// fare since.
func anyRegularContainerStarted(st corev1.PodStatus) bool {
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

func (m *Manager) state(pod *corev1.Pod, c *corev1.Container, s *runtimeapi.ContainerStatus) corev1.ContainerState {
	id := m.cfg.RuntimeName + "://" + s.Id
	switch s.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: apiTime(s.StartedAt)}}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		t := &corev1.ContainerStateTerminated{
			ExitCode:    s.ExitCode,
			Reason:      s.Reason,
			Message:     m.terminationMessage(pod, c, s),
			StartedAt:   apiTime(s.StartedAt),
			FinishedAt:  apiTime(s.FinishedAt),
			ContainerID: id,
		}
		if t.Reason == "" {
			t.Reason = "Error"
			if t.ExitCode == 0 {
				t.Reason = "Completed"
			}
		}
		return corev1.ContainerState{Terminated: t}
	default:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}}
	}
}

// terminationMessage is the kubelet's: the runtime's message, followed by
// what the container wrote to its terminationMessagePath (the host file
// bound there) or, when that is empty and the container failed under
// FallbackToLogsOnError, the end of its log.
func (m *Manager) terminationMessage(pod *corev1.Pod, c *corev1.Container, s *runtimeapi.ContainerStatus) string {
	msg := m.terminationFile(pod, c, s)
	if msg == "" && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && s.ExitCode != 0 && s.Reason != "ContainerCannotRun" {
		msg = lastLogLines(s.LogPath)
	}
	switch {
	case msg == "":
		return s.Message
	case s.Message == "":
		return msg
	}
	return s.Message + ": " + msg
}

// terminationFile reads what the container wrote to its
// terminationMessagePath, up to the kubelet's limit.
func (m *Manager) terminationFile(pod *corev1.Pod, c *corev1.Container, s *runtimeapi.ContainerStatus) string {
	path := filepath.Join(m.cfg.DataDir, "pods", string(pod.UID), "containers", c.Name, strconv.FormatUint(uint64(s.Metadata.Attempt), 10)+".termination-log")
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, maxTerminationMessage)
	n, _ := f.Read(buf)
	return string(buf[:n])
}

// The kubelet's bounds on a termination message taken from the log: its
// last 80 lines, and of those the last 2048 bytes.
const (
	terminationLogLines = 80
	terminationLogBytes = 2048
)

// lastLogLines is the end of the container log at path, as the kubelet
// takes it for a termination message.
func lastLogLines(path string) string {
	if path == "" {
		return ""
	}
	tail := &lastBytes{max: terminationLogBytes}
	lines := int64(terminationLogLines)
	if err := crilog.ReadLog(context.Background(), path, tail, crilog.LogOptions{TailLines: &lines}); err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return string(tail.buf)
}

// lastBytes keeps the last max bytes written to it.
type lastBytes struct {
	max int
	buf []byte
}

func (b *lastBytes) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// phase follows the kubelet's getPhase (with ContainerRestartRules, on
// by default): a failed init container or a stopped container counts as
// restarting when upstream's ContainerShouldRestart says its own
// restartPolicy and restartPolicyRules, else the pod's, restart it.
func phase(pod *corev1.Pod, st corev1.PodStatus) corev1.PodPhase {
	for i, ic := range st.InitContainerStatuses {
		c := &pod.Spec.InitContainers[i]
		if podutil.IsRestartableInitContainer(c) {
			continue
		}
		if t := lastExit(ic); t != nil && t.ExitCode != 0 && !podutil.ContainerShouldRestart(*c, pod.Spec, t.ExitCode) {
			return corev1.PodFailed
		}
	}
	if len(initPending(pod, st)) > 0 && !anyRegularContainerStarted(st) {
		return corev1.PodPending
	}
	specs := map[string]*corev1.Container{}
	for i := range pod.Spec.Containers {
		specs[pod.Spec.Containers[i].Name] = &pod.Spec.Containers[i]
	}
	var waitingN, running, succeeded, stopped, stoppedForGood int
	for _, cs := range st.ContainerStatuses {
		t := lastExit(cs)
		switch {
		case cs.State.Running != nil:
			running++
			continue
		case t == nil:
			waitingN++
			continue
		}
		stopped++ // exited, or waiting to restart
		if cs.State.Terminated != nil && t.ExitCode == 0 {
			succeeded++
		}
		c := specs[cs.Name]
		if c == nil {
			c = &corev1.Container{} // no rules of its own: the pod's policy
		}
		if !podutil.ContainerShouldRestart(*c, pod.Spec, t.ExitCode) {
			stoppedForGood++
		}
	}
	switch {
	case waitingN > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped != stoppedForGood:
		return corev1.PodRunning // some are restarting
	case succeeded == stopped:
		return corev1.PodSucceeded
	default:
		return corev1.PodFailed
	}
}

// lastExit is a container's exit: the one it is in, or, waiting to
// restart, its last; nil if it has not exited.
func lastExit(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if cs.State.Terminated != nil {
		return cs.State.Terminated
	}
	if cs.State.Waiting != nil {
		return cs.LastTerminationState.Terminated
	}
	return nil
}

// conditions is the pod's condition list as the kubelet writes it: every
// condition the kubelet does not own stays as it is (the scheduler's
// DisruptionTarget, readiness gates, a controller's own), and the
// kubelet-owned ones come from upstream's generators, which also weigh the
// readiness gates into Ready. A condition keeps its transition time while
// its status holds, as the kubelet's status manager does.
func conditions(pod *corev1.Pod, st corev1.PodStatus, sandboxReady bool, now metav1.Time) []corev1.PodCondition {
	old := &pod.Status
	out := make([]corev1.PodCondition, 0, len(old.Conditions)+5)
	for _, c := range old.Conditions {
		if !kubetypes.PodConditionByKubelet(c.Type) {
			out = append(out, c)
		}
	}
	sandbox := corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}
	if !sandboxReady {
		sandbox.Status, sandbox.Reason = corev1.ConditionFalse, kubetypes.PodSandboxNotReadyReason
	}
	sandbox.ObservedGeneration = podutil.CalculatePodConditionObservedGeneration(old, pod.Generation, sandbox.Type)
	all := append(slices.Clone(st.InitContainerStatuses), st.ContainerStatuses...)
	out = append(out, sandbox, kubeletstatus.GeneratePodInitializedCondition(pod, old, all, st.Phase))
	out = append(out, kubeletstatus.GeneratePodReadyCondition(pod, old, out, all, st.Phase))
	out = append(out, kubeletstatus.GenerateContainersReadyCondition(pod, old, all, st.Phase))
	out = append(out, scheduledCondition(pod))
	for i := range out {
		if !kubetypes.PodConditionByKubelet(out[i].Type) {
			continue
		}
		out[i].LastTransitionTime = now
		if _, prev := podutil.GetPodCondition(old, out[i].Type); prev != nil && prev.Status == out[i].Status {
			out[i].LastTransitionTime = prev.LastTransitionTime
		}
	}
	return out
}

// scheduledCondition is PodScheduled=True answering the pod's generation;
// the scheduler's reason and times stay when it wrote one.
func scheduledCondition(pod *corev1.Pod) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	if _, prev := podutil.GetPodCondition(&pod.Status, c.Type); prev != nil && prev.Status == c.Status {
		c = *prev
	}
	c.ObservedGeneration = podutil.CalculatePodConditionObservedGeneration(&pod.Status, pod.Generation, c.Type)
	return c
}

// patchStatus sends the status to the API server only when it differs from
// what the server has, as a strategic merge patch of the status subresource
// with the pod's UID as precondition (the kubelet's way). What the server
// has is the status this Manager last sent, when it sent one: the
// informer's copy may not have caught up with it yet.
//
// Every status answers the pod's generation (status.observedGeneration),
// as the kubelet's status manager sets it, and never a lower one than the
// server has: a sync from an older copy of the pod must not send the
// generation backwards.
func (m *Manager) patchStatus(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus) error {
	old := m.sent.get(pod.UID, pod.Status)
	status.ObservedGeneration = max(podutil.CalculatePodStatusObservedGeneration(pod), old.ObservedGeneration)
	if equality.Semantic.DeepEqual(old, status) {
		return nil
	}
	oldData, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return err
	}
	newData, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: pod.UID}, Status: status})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
	if err != nil {
		return fmt.Errorf("status patch for %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if _, err := m.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		m.sent.forget(pod.UID)
		return fmt.Errorf("patch status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m.sent.set(pod.UID, status)
	return nil
}

// sentStatuses remembers the last status sent per pod.
type sentStatuses struct {
	mu sync.Mutex
	m  map[types.UID]corev1.PodStatus
}

func (s *sentStatuses) get(uid types.UID, fallback corev1.PodStatus) corev1.PodStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[uid]; ok {
		return st
	}
	return fallback
}

func (s *sentStatuses) set(uid types.UID, st corev1.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.UID]corev1.PodStatus{}
	}
	s.m[uid] = st
}

func (s *sentStatuses) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, uid)
}

// apiTime converts a CRI timestamp (ns) to the API's second precision, so a
// status read back from the server compares equal to a freshly computed one.
func apiTime(ns int64) metav1.Time {
	return metav1.NewTime(time.Unix(0, ns).Truncate(time.Second))
}

// sandboxIPs are a sandbox's IPs, the primary first, as pod status lists them.
func sandboxIPs(n *runtimeapi.PodSandboxNetworkStatus) []corev1.PodIP {
	if n.GetIp() == "" {
		return nil
	}
	ips := []corev1.PodIP{{IP: n.GetIp()}}
	for _, ip := range n.GetAdditionalIps() {
		ips = append(ips, corev1.PodIP{IP: ip.GetIp()})
	}
	return ips
}
