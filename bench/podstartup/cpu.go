package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/berth/berth/bench/internal/crirun"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times (100 on
// every Linux architecture Go supports).
const clockTicks = 100

// cpuSeconds is the CPU time (user + system) pid has used, plus that of its
// children it has waited for: runc and CNI plugin invocations are counted
// with whoever ran them.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	ticks, err := statCPUTicks(string(data))
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return float64(ticks) / clockTicks, nil
}

// statCPUTicks sums utime, stime, cutime and cstime (fields 14-17) of a
// /proc/PID/stat line.
func statCPUTicks(stat string) (int64, error) {
	// The command name (field 2) may hold spaces and parentheses; the fields
	// after it start behind its last ')', with state as field 3.
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	const utime = 14 - 3
	if len(fields) < utime+4 {
		return 0, fmt.Errorf("%d fields after the command name", len(fields))
	}
	var ticks int64
	for _, f := range fields[utime : utime+4] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return ticks, nil
}

// cpuSample is the CPU seconds used so far by each part of one node: the
// server, the agent, the runtime daemon, and its per-pod or per-container
// helpers (berth-monitor, containerd-shim) together.
type cpuSample struct {
	server, agent, runtime, helpers float64
}

// sampleCPU reads every part's CPU time; helpers are the processes whose
// command line names the runtime's directory (none before the first pod).
func sampleCPU(srv, agent *crirun.Process, rt *crirun.Runtime) (cpuSample, error) {
	var s cpuSample
	var err error
	if s.server, err = cpuSeconds(srv.Pid()); err != nil {
		return s, err
	}
	if s.agent, err = cpuSeconds(agent.Pid()); err != nil {
		return s, err
	}
	if s.runtime, err = cpuSeconds(rt.Proc.Pid()); err != nil {
		return s, err
	}
	for _, pid := range crirun.ProcessesMentioning(rt.Dir) {
		if pid == rt.Proc.Pid() || pid == agent.Pid() || pid == srv.Pid() {
			continue
		}
		if cpu, err := cpuSeconds(pid); err == nil { // a helper may exit meanwhile
			s.helpers += cpu
		}
	}
	return s, nil
}

// sub is the CPU used between before and s.
func (s cpuSample) sub(before cpuSample) cpuSample {
	return cpuSample{s.server - before.server, s.agent - before.agent, s.runtime - before.runtime, s.helpers - before.helpers}
}
