package tables

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func running(ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name string, t corev1.ContainerStateTerminated) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &t}}
}

func pod(phase corev1.PodPhase, initContainers int, statuses ...corev1.ContainerStatus) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(10 * time.Minute)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: statuses},
	}
	for i := 0; i < initContainers; i++ {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init" + string(rune('a'+i))})
	}
	return p
}

func withInit(p *corev1.Pod, statuses ...corev1.ContainerStatus) *corev1.Pod {
	p.Status.InitContainerStatuses = statuses
	return p
}

func TestPodStatusColumns(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	started := true
	crashing := waiting("app", "CrashLoopBackOff")
	crashing.RestartCount = 5
	crashing.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(2 * time.Minute)}

	cases := []struct {
		name                    string
		pod                     *corev1.Pod
		ready, status, restarts string
	}{
		{"pending, nothing started", pod(corev1.PodPending, 0), "0/1", "Pending", "0"},
		{"creating", pod(corev1.PodPending, 0, waiting("app", "ContainerCreating")), "0/1", "ContainerCreating", "0"},
		{"running and ready", pod(corev1.PodRunning, 0, running(true)), "1/1", "Running", "0"},
		{"running, not ready", pod(corev1.PodRunning, 0, running(false)), "0/1", "Running", "0"},
		{"crash loop", pod(corev1.PodRunning, 0, crashing), "0/1", "CrashLoopBackOff", "5 (2m ago)"},
		{"image pull", pod(corev1.PodPending, 0, waiting("app", "ImagePullBackOff")), "0/1", "ImagePullBackOff", "0"},
		{"completed", pod(corev1.PodSucceeded, 0, terminated("app", corev1.ContainerStateTerminated{Reason: "Completed"})), "0/1", "Completed", "0"},
		{"exit code without reason", pod(corev1.PodFailed, 0, terminated("app", corev1.ContainerStateTerminated{ExitCode: 3})), "0/1", "ExitCode:3", "0"},
		{"signal without reason", pod(corev1.PodFailed, 0, terminated("app", corev1.ContainerStateTerminated{Signal: 9})), "0/1", "Signal:9", "0"},
		{"evicted", func() *corev1.Pod { p := pod(corev1.PodFailed, 0); p.Status.Reason = "Evicted"; return p }(), "0/1", "Evicted", "0"},
		{"first init running", withInit(pod(corev1.PodPending, 2), running(false)), "0/1", "Init:0/2", "0"},
		{"second init running", withInit(pod(corev1.PodPending, 2),
			terminated("inita", corev1.ContainerStateTerminated{Reason: "Completed"}), waiting("initb", "PodInitializing")), "0/1", "Init:1/2", "0"},
		{"init crash loop", withInit(pod(corev1.PodPending, 1), func() corev1.ContainerStatus {
			c := waiting("inita", "CrashLoopBackOff")
			c.RestartCount = 3
			return c
		}()), "0/1", "Init:CrashLoopBackOff", "3"},
		{"init failed", withInit(pod(corev1.PodFailed, 1), terminated("inita", corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1})), "0/1", "Init:Error", "0"},
		{"init failed without reason", withInit(pod(corev1.PodPending, 1), terminated("inita", corev1.ContainerStateTerminated{ExitCode: 2})), "0/1", "Init:ExitCode:2", "0"},
		{"sidecar counts as a container", func() *corev1.Pod {
			p := withInit(pod(corev1.PodRunning, 1, running(true)), corev1.ContainerStatus{Name: "inita", Ready: true, Started: &started, RestartCount: 2,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
			p.Spec.InitContainers[0].RestartPolicy = &always
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}
			return p
		}(), "2/2", "Running", "2"},
		{"terminating", func() *corev1.Pod {
			p := pod(corev1.PodRunning, 0, running(true))
			p.DeletionTimestamp = &metav1.Time{Time: now}
			return p
		}(), "1/1", "Terminating", "0"},
		{"deleted after it finished", func() *corev1.Pod {
			p := pod(corev1.PodSucceeded, 0, terminated("app", corev1.ContainerStateTerminated{Reason: "Completed"}))
			p.DeletionTimestamp = &metav1.Time{Time: now}
			return p
		}(), "0/1", "Completed", "0"},
		{"node lost", func() *corev1.Pod {
			p := pod(corev1.PodRunning, 0, running(true))
			p.DeletionTimestamp, p.Status.Reason = &metav1.Time{Time: now}, "NodeLost"
			return p
		}(), "1/1", "Unknown", "0"},
		{"one done, one running, pod ready", func() *corev1.Pod {
			p := pod(corev1.PodRunning, 0, terminated("done", corev1.ContainerStateTerminated{Reason: "Completed"}), running(true))
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "done"})
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			return p
		}(), "1/2", "Running", "0"},
		{"one done, one running, pod not ready", func() *corev1.Pod {
			p := pod(corev1.PodRunning, 0, terminated("done", corev1.ContainerStateTerminated{Reason: "Completed"}), running(true))
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "done"})
			return p
		}(), "1/2", "NotReady", "0"},
		{"scheduling gated", func() *corev1.Pod {
			p := pod(corev1.PodPending, 0)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Reason: corev1.PodReasonSchedulingGated}}
			return p
		}(), "0/1", "SchedulingGated", "0"},
	}
	c := testConverter(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := c.Convert(tc.pod, metav1.IncludeNone)
			if err != nil {
				t.Fatal(err)
			}
			got := table.Rows[0].Cells
			if got[0] != "web" || got[1] != tc.ready || got[2] != tc.status || got[3] != tc.restarts || got[4] != "10m" {
				t.Errorf("cells %v, want web %s %s %s 10m", got[:5], tc.ready, tc.status, tc.restarts)
			}
		})
	}
}

func TestPodWideColumnsAndConditions(t *testing.T) {
	p := pod(corev1.PodRunning, 0, running(true))
	p.Spec.NodeName = "node-1"
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.88.0.5"}, {IP: "fd00::5"}}
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}}
	p.Status.Conditions = []corev1.PodCondition{{Type: "example.com/a", Status: corev1.ConditionTrue}, {Type: "example.com/b", Status: corev1.ConditionFalse}}
	table, err := testConverter(t).Convert(p, metav1.IncludeNone)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"10.88.0.5", "node-1", "<none>", "1/2"}
	for i, w := range want {
		if got := table.Rows[0].Cells[5+i]; got != w {
			t.Errorf("%s = %v, want %v", table.ColumnDefinitions[5+i].Name, got, w)
		}
	}
	if len(table.Rows[0].Conditions) != 0 {
		t.Errorf("running pod has row conditions %v", table.Rows[0].Conditions)
	}

	done, err := testConverter(t).Convert(pod(corev1.PodSucceeded, 0), metav1.IncludeNone)
	if err != nil {
		t.Fatal(err)
	}
	if c := done.Rows[0].Conditions; len(c) != 1 || c[0].Type != metav1.RowCompleted || c[0].Status != metav1.ConditionTrue {
		t.Errorf("succeeded pod row conditions %v, want Completed=True", c)
	}
	if cells := done.Rows[0].Cells; cells[5] != "<none>" || cells[6] != "<none>" || cells[8] != "<none>" {
		t.Errorf("unscheduled pod wide cells %v, want <none>s", cells[5:])
	}
}
