package oci

import (
	"context"
	"fmt"
	"time"
)

// Stats reads the container's cgroup usage through `runc events --stats`,
// which knows both cgroup v1 and v2 layouts.
func (r *Runc) Stats(ctx context.Context, id string) (Stats, error) {
	if _, err := r.existingDir(id); err != nil {
		return Stats{}, err
	}
	s, err := r.runc.Stats(ctx, id)
	if err != nil {
		return Stats{}, fmt.Errorf("stats of %s: %w", id, err)
	}
	raw := s.Memory.Raw
	// cgroup v1 names its hierarchical counters total_*; v2 has no prefix.
	pick := func(v1, v2 string) uint64 {
		if v, ok := raw[v1]; ok {
			return v
		}
		return raw[v2]
	}
	usage := s.Memory.Usage.Usage
	inactive := pick("total_inactive_file", "inactive_file")
	workingSet := usage
	if inactive < usage {
		workingSet = usage - inactive
	}
	return Stats{
		Timestamp:        time.Now(),
		CPUUsageNanos:    s.Cpu.Usage.Total,
		MemoryUsage:      usage,
		MemoryWorkingSet: workingSet,
		MemoryRSS:        pick("total_rss", "anon"),
		PageFaults:       pick("total_pgfault", "pgfault"),
		MajorPageFaults:  pick("total_pgmajfault", "pgmajfault"),
	}, nil
}
