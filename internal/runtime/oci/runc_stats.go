package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	gorunc "github.com/containerd/go-runc"
)

// Stats reads the container's cgroup usage through `runc events --stats`,
// which knows both cgroup v1 and v2 layouts. It runs runc itself rather
// than through go-runc's Stats, whose reader races runc's exit (the pipe
// may be closed before the event is read).
func (r *Runc) Stats(ctx context.Context, id string) (Stats, error) {
	if _, err := r.existingDir(id); err != nil {
		return Stats{}, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, r.cfg.Binary, "--root", r.cfg.Root, "events", "--stats", id)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Stats{}, fmt.Errorf("stats of %s: %w: %s", id, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var ev gorunc.Event
	if err := json.Unmarshal(out, &ev); err != nil || ev.Stats == nil {
		return Stats{}, fmt.Errorf("stats of %s: malformed runc event: %v", id, err)
	}
	s := ev.Stats
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
