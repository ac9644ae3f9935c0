package main

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podTimes are one pod's moments: when the bench sent its create request,
// when the watch first showed all its containers running, and when it first
// showed the pod Ready; runningSince is the latest of the containers'
// startedAt in that first event (the runtime's start, as the agent reported
// it), so started - runningSince is how long the report took to be seen.
type podTimes struct {
	created, started, ready time.Time
	runningSince            time.Time
}

// tracker collects podTimes from the creators and the watch; done is
// closed once every expected pod has started and is Ready.
type tracker struct {
	mu        sync.Mutex
	pods      map[string]*podTimes
	want      int
	complete  int
	restarted map[string]bool // pods seen with a container restart
	done      chan struct{}
}

func newTracker(want int) *tracker {
	return &tracker{pods: map[string]*podTimes{}, want: want, restarted: map[string]bool{}, done: make(chan struct{})}
}

func (t *tracker) entry(name string) *podTimes {
	p, ok := t.pods[name]
	if !ok {
		p = &podTimes{}
		t.pods[name] = p
	}
	return p
}

// created records when the create request for name was sent.
func (t *tracker) created(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entry(name).created = at
}

// observe records what a watch event at time at shows of pod: the first
// moment all its containers are running, the first moment it is Ready.
func (t *tracker) observe(pod *corev1.Pod, at time.Time) {
	started, ready := allContainersRunning(pod), podReady(pod)
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.entry(pod.Name)
	wasComplete := !p.started.IsZero() && !p.ready.IsZero()
	if started && p.started.IsZero() {
		p.started, p.runningSince = at, latestStart(pod)
	}
	if ready && p.ready.IsZero() {
		p.ready = at
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			t.restarted[pod.Name] = true
		}
	}
	if !wasComplete && !p.started.IsZero() && !p.ready.IsZero() {
		t.complete++
		if t.complete == t.want {
			close(t.done)
		}
	}
}

// allContainersRunning: every container of the spec has a status whose
// state is running (its startedAt set by the runtime's start).
func allContainersRunning(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// latestStart is the latest startedAt of pod's running containers.
func latestStart(pod *corev1.Pod) time.Time {
	var latest time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if r := cs.State.Running; r != nil && r.StartedAt.After(latest) {
			latest = r.StartedAt.Time
		}
	}
	return latest
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// latencies returns, for the pods both created and complete, the time from
// creation to started and to Ready, the delay from the containers'
// startedAt to the watch event that showed them running, and the span from
// the first creation to the last start.
func (t *tracker) latencies() (started, ready, reportDelay []time.Duration, span time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first, last time.Time
	for _, p := range t.pods {
		if p.created.IsZero() || p.started.IsZero() || p.ready.IsZero() {
			continue
		}
		started = append(started, p.started.Sub(p.created))
		ready = append(ready, p.ready.Sub(p.created))
		reportDelay = append(reportDelay, p.started.Sub(p.runningSince))
		if first.IsZero() || p.created.Before(first) {
			first = p.created
		}
		if p.started.After(last) {
			last = p.started
		}
	}
	return started, ready, reportDelay, last.Sub(first)
}

// restarts is how many pods were seen with a restarted container.
func (t *tracker) restarts() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.restarted)
}
