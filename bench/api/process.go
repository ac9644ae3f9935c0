package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/berth/berth/internal/testkit/wait"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// process is one server process under test, started by this tool, whose
// memory is measured. Its output goes to a log file for post-mortems.
type process struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan error
}

// startProcess runs bin with args, logging to logPath. The child dies with
// this tool (Pdeathsig), so an interrupted run leaves nothing behind.
func startProcess(name, logPath, bin string, args ...string) (*process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	return p, nil
}

// failed reports the process's exit, if it has exited, without waiting.
func (p *process) failed() error {
	select {
	case err := <-p.exited:
		p.exited <- err // keep it for stop
		return fmt.Errorf("%s exited (%v); see %s", p.name, err, p.log.Name())
	default:
		return nil
	}
}

// stop sends SIGTERM, then SIGKILL if the process has not exited after grace.
func (p *process) stop(grace time.Duration) {
	defer p.log.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// memory is a process's resident set, now and at its peak.
type memory struct {
	name      string
	rss, peak uint64 // bytes
}

func (p *process) memory() (memory, error) {
	data, err := os.ReadFile(p.procFile("status"))
	if err != nil {
		return memory{}, fmt.Errorf("%s memory: %w", p.name, err)
	}
	m := memory{name: p.name}
	if m.rss, err = statusField(data, "VmRSS"); err != nil {
		return memory{}, fmt.Errorf("%s memory: %w", p.name, err)
	}
	if m.peak, err = statusField(data, "VmHWM"); err != nil {
		return memory{}, fmt.Errorf("%s memory: %w", p.name, err)
	}
	return m, nil
}

// procFile is the process's file name under /proc/PID.
func (p *process) procFile(name string) string {
	return "/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/" + name
}

// userHz is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// the kernel fixes at 100 for that interface on every architecture.
const userHz = 100

// cpuTime is the CPU the process has used so far, user and system, over
// all its threads.
func (p *process) cpuTime() (time.Duration, error) {
	data, err := os.ReadFile(p.procFile("stat"))
	if err != nil {
		return 0, fmt.Errorf("%s CPU time: %w", p.name, err)
	}
	// The command name, in parentheses, may hold spaces; utime and stime
	// are the 12th and 13th fields after it.
	_, rest, ok := bytes.Cut(data, []byte(") "))
	fields := bytes.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, fmt.Errorf("%s CPU time: unexpected /proc stat %q", p.name, data)
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s CPU time: %w", p.name, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHz, nil
}

// selfCPUTime is the user and system time this process (the load
// generator) has used so far. It shares the machine's cores with the
// server under test, so it bounds the throughput either server can show.
func selfCPUTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("load generator CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// statusField reads a "Name:   123 kB" line of /proc/PID/status, in bytes.
func statusField(status []byte, field string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, value, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || string(name) != field {
			continue
		}
		fields := bytes.Fields(value)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", field, sc.Text())
		}
		kb, err := strconv.ParseUint(string(fields[0]), 10, 64)
		return kb * 1024, err
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// waitFor polls check until it succeeds, ctx ends, timeout passes, or one
// of procs exits; it returns check's last error on timeout.
func waitFor(ctx context.Context, timeout time.Duration, procs []*process, check func(context.Context) error) error {
	var last error
	err := wait.PollTrue(ctx, timeout, "the target to be ready", func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if err := p.failed(); err != nil {
				return false, err
			}
		}
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w: last: %w", err, last)
	}
	return err
}
