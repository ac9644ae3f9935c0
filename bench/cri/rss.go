package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berth/berth/bench/internal/crirun"
)

// memory is one process's resident set from /proc/PID/status, in KiB:
// all of it (VmRSS) and its anonymous part (RssAnon; the rest is file
// pages, mostly the executable's, shared with other processes mapping it).
type memory struct {
	rss, anon int64
}

func (m memory) add(o memory) memory { return memory{m.rss + o.rss, m.anon + o.anon} }

// readMemory reads pid's VmRSS and RssAnon.
func readMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	var found int
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "RssAnon") {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, key, err)
		}
		if key == "VmRSS" {
			m.rss = kib
		} else {
			m.anon = kib
		}
		found++
	}
	if found != 2 {
		return memory{}, fmt.Errorf("/proc/%d/status: no VmRSS/RssAnon (a kernel thread or a zombie?)", pid)
	}
	return m, nil
}

// helperProcesses returns the PIDs of processes named comm whose command
// line mentions dir: the daemon's own monitors or shims, not another's.
func helperProcesses(comm, dir string) []int {
	var pids []int
	for _, pid := range crirun.ProcessesMentioning(dir) {
		name, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		if err == nil && strings.TrimSpace(string(name)) == comm {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sumMemory adds up the memory of pids.
func sumMemory(pids []int) (memory, error) {
	var total memory
	for _, pid := range pids {
		m, err := readMemory(pid)
		if err != nil {
			return memory{}, err
		}
		total = total.add(m)
	}
	return total, nil
}
