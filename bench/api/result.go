package main

import (
	"cmp"
	"slices"
	"time"
)

// result is one target's figures for one shape.
type result struct {
	target                                      string
	createPerSec, statusPerSec, deletePerSec    float64
	cpuPerCreate                                time.Duration // the server's processes' CPU over the create phase, per pod created
	loadCPUPerCreate                            time.Duration // this process's CPU (clients, node watchers, leases) over the create phase, per pod created
	watchP50, watchP99                          time.Duration // create start → ADDED at the pod's node watcher
	pacedP50, pacedP99                          time.Duration // the same, for pods created at pacedRate
	missedAdds, misdelivered                    int64
	failedCreates, failedPatches, failedDeletes int
	list                                        time.Duration // median full LIST of all pods
	memStarted, memLoaded, memEnd               []memory
}

// medianResult combines several runs against one target: the median of
// each figure, and the worst run's count of failed requests and of missed
// or misdelivered events.
func medianResult(runs []*result) *result {
	if len(runs) == 1 {
		return runs[0]
	}
	pick := func(f func(*result) float64) float64 { return median(runs, f) }
	pickDuration := func(f func(*result) time.Duration) time.Duration {
		return time.Duration(pick(func(r *result) float64 { return float64(f(r)) }))
	}
	out := &result{
		target:           runs[0].target,
		createPerSec:     pick(func(r *result) float64 { return r.createPerSec }),
		statusPerSec:     pick(func(r *result) float64 { return r.statusPerSec }),
		deletePerSec:     pick(func(r *result) float64 { return r.deletePerSec }),
		cpuPerCreate:     pickDuration(func(r *result) time.Duration { return r.cpuPerCreate }),
		loadCPUPerCreate: pickDuration(func(r *result) time.Duration { return r.loadCPUPerCreate }),
		watchP50:         pickDuration(func(r *result) time.Duration { return r.watchP50 }),
		watchP99:         pickDuration(func(r *result) time.Duration { return r.watchP99 }),
		pacedP50:         pickDuration(func(r *result) time.Duration { return r.pacedP50 }),
		pacedP99:         pickDuration(func(r *result) time.Duration { return r.pacedP99 }),
		list:             pickDuration(func(r *result) time.Duration { return r.list }),
		memStarted:       medianMemory(runs, func(r *result) []memory { return r.memStarted }),
		memLoaded:        medianMemory(runs, func(r *result) []memory { return r.memLoaded }),
		memEnd:           medianMemory(runs, func(r *result) []memory { return r.memEnd }),
	}
	for _, r := range runs {
		out.missedAdds = max(out.missedAdds, r.missedAdds)
		out.misdelivered = max(out.misdelivered, r.misdelivered)
		out.failedCreates = max(out.failedCreates, r.failedCreates)
		out.failedPatches = max(out.failedPatches, r.failedPatches)
		out.failedDeletes = max(out.failedDeletes, r.failedDeletes)
	}
	return out
}

// median is the middle value of f over runs (the lower middle for an even count).
func median[T cmp.Ordered](runs []*result, f func(*result) T) T {
	values := make([]T, len(runs))
	for i, r := range runs {
		values[i] = f(r)
	}
	slices.Sort(values)
	return values[(len(values)-1)/2]
}

// medianMemory takes, per process, the median resident and peak sizes.
func medianMemory(runs []*result, f func(*result) []memory) []memory {
	out := slices.Clone(f(runs[0]))
	for i := range out {
		out[i].rss = median(runs, func(r *result) uint64 { return f(r)[i].rss })
		out[i].peak = median(runs, func(r *result) uint64 { return f(r)[i].peak })
	}
	return out
}
