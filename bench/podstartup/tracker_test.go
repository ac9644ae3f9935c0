package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/bench/internal/report"
)

// startedAt is the runtime's start time of every running container in pod().
var startedAt = time.Unix(1000, 0)

// pod builds a pod of two containers: running says which of them are in
// state running, ready whether the Ready condition is True.
func pod(name string, ready bool, running ...bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	for i, r := range running {
		cs := corev1.ContainerStatus{Name: p.Spec.Containers[i].Name}
		if r {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}
		} else {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func TestTrackerTakesTheFirstEventWhereAllContainersRunAndReady(t *testing.T) {
	t0 := startedAt
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := newTracker(2)
	tr.created("p1", at(0))
	tr.created("p2", at(10))

	tr.observe(pod("p1", false), at(50))              // no statuses yet
	tr.observe(pod("p1", false, true), at(60))        // one status of two
	tr.observe(pod("p1", false, true, false), at(70)) // one of two running
	tr.observe(pod("p1", false, true, true), at(300)) // started
	tr.observe(pod("p1", true, true, true), at(400))  // Ready
	tr.observe(pod("p1", true, true, true), at(900))  // a later event changes nothing
	select {
	case <-tr.done:
		t.Fatal("done with one of two pods complete")
	default:
	}
	p2 := pod("p2", true, true, true)
	p2.Status.ContainerStatuses[1].RestartCount = 1
	tr.observe(p2, at(510)) // started and Ready in one event
	select {
	case <-tr.done:
	default:
		t.Fatal("not done with both pods complete")
	}

	started, ready, delays, span := tr.latencies()
	if len(started) != 2 || len(ready) != 2 {
		t.Fatalf("latencies of %d/%d pods, want 2", len(started), len(ready))
	}
	want := map[time.Duration]bool{300 * time.Millisecond: true, 500 * time.Millisecond: true}
	for _, d := range started {
		if !want[d] {
			t.Errorf("started latency %s, want 300ms and 500ms", d)
		}
	}
	if report.Quantile(ready, 0) != 400*time.Millisecond || report.Quantile(ready, 1) != 500*time.Millisecond {
		t.Errorf("ready latencies %v, want 400ms and 500ms", ready)
	}
	if span != 510*time.Millisecond {
		t.Errorf("span %s, want 510ms (first creation to last start)", span)
	}
	if len(delays) != 2 || report.Quantile(delays, 0) != 300*time.Millisecond || report.Quantile(delays, 1) != 510*time.Millisecond {
		t.Errorf("report delays %v, want 300ms and 510ms (from startedAt %s)", delays, t0)
	}
	if tr.restarts() != 1 {
		t.Errorf("restarts %d, want 1", tr.restarts())
	}
}
