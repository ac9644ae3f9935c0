package tables

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podPrinter() printer {
	status, spec := corev1.PodStatus{}.SwaggerDoc(), corev1.PodSpec{}.SwaggerDoc()
	return typed(
		[]metav1.TableColumnDefinition{
			nameColumn(),
			column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
			column("Status", "The aggregate status of the containers in this pod."),
			column("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
			ageColumn(),
			wideColumn("IP", status["podIP"]),
			wideColumn("Node", spec["nodeName"]),
			wideColumn("Nominated Node", status["nominatedNodeName"]),
			wideColumn("Readiness Gates", spec["readinessGates"]),
		},
		func(pod *corev1.Pod, now time.Time) metav1.TableRow {
			s := summarizePod(pod)
			restarts := strconv.Itoa(s.restarts)
			if s.restarts != 0 && !s.lastRestart.IsZero() {
				restarts = fmt.Sprintf("%d (%s ago)", s.restarts, since(s.lastRestart, now))
			}
			ip := ""
			if len(pod.Status.PodIPs) > 0 {
				ip = pod.Status.PodIPs[0].IP
			}
			row := cells(pod.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.status, restarts, since(pod.CreationTimestamp, now),
				orNone(ip), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), readinessGates(pod))
			row.Conditions = completion(pod.Status.Phase)
			return row
		})
}

// completion marks finished pods, as kube-apiserver does, so clients can
// tell them apart without parsing STATUS.
func completion(phase corev1.PodPhase) []metav1.TableRowCondition {
	switch phase {
	case corev1.PodSucceeded:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(phase), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(phase), Message: "The pod failed."}}
	}
	return nil
}

// podSummary is what the READY, STATUS and RESTARTS columns show.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  metav1.Time
}

// summarizePod computes READY, STATUS and RESTARTS the way kubectl users
// know them: the pod's phase (or reason), overridden by the first init
// container still in the way (Init:1/2, Init:CrashLoopBackOff), else by
// the most telling app container state (ContainerCreating, CrashLoopBackOff,
// Completed, Error), and finally by Terminating for a pod being deleted.
func summarizePod(pod *corev1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), status: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.status = corev1.PodReasonSchedulingGated
		}
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			s.total++
		}
	}

	initStatus, initializing, allInit, sidecar := summarizeInit(pod, sidecars, &s.ready)
	if initializing {
		s.status = initStatus
	}
	if initializing && !conditionTrue(pod, corev1.PodInitialized) {
		s.restarts, s.lastRestart = allInit.count, allInit.last
	} else {
		// Once initialized, only sidecars' restarts still count among init
		// containers; app containers decide the status.
		s.restarts, s.lastRestart = sidecar.count, sidecar.last
		summarizeApp(pod, &s)
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			s.status = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			s.status = "Terminating"
		}
	}
	return s
}

// restartCount accumulates restarts and the latest restart time.
type restartCount struct {
	count int
	last  metav1.Time
}

func (r *restartCount) add(cs corev1.ContainerStatus) {
	r.count += int(cs.RestartCount)
	if t := cs.LastTerminationState.Terminated; t != nil && r.last.Before(&t.FinishedAt) {
		r.last = t.FinishedAt
	}
}

// summarizeInit walks init containers in order and stops at the first that
// has not finished: its state is the pod's status while initializing.
func summarizeInit(pod *corev1.Pod, sidecars map[string]bool, ready *int) (status string, initializing bool, all, sidecar restartCount) {
	for i, cs := range pod.Status.InitContainerStatuses {
		all.add(cs)
		if sidecars[cs.Name] {
			sidecar.add(cs)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				*ready++
			}
			continue
		case cs.State.Terminated != nil:
			status = "Init:" + terminatedReason(cs.State.Terminated)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			status = "Init:" + cs.State.Waiting.Reason
		default:
			status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		return status, true, all, sidecar
	}
	return "", false, all, sidecar
}

// summarizeApp lets app container states override the phase; the first
// container listed has the last word, as in kubectl.
func summarizeApp(pod *corev1.Pod, s *podSummary) {
	running := false
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := pod.Status.ContainerStatuses[i]
		rc := restartCount{count: s.restarts, last: s.lastRestart}
		rc.add(cs)
		s.restarts, s.lastRestart = rc.count, rc.last
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			s.status = cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			s.status = terminatedReason(cs.State.Terminated)
		case cs.Ready && cs.State.Running != nil:
			running = true
			s.ready++
		}
	}
	// A pod with one container done and another still running is not done.
	if s.status == "Completed" && running {
		s.status = "NotReady"
		if conditionTrue(pod, corev1.PodReady) {
			s.status = "Running"
		}
	}
}

func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

func conditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readinessGates shows how many of the pod's readiness gates are met.
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	met := 0
	for _, gate := range pod.Spec.ReadinessGates {
		if conditionTrue(pod, gate.ConditionType) {
			met++
		}
	}
	return fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
}
