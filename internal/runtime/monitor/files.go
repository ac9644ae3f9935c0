// Package monitor is the small per-container process that parents a
// container instead of the runtime service: it runs `runc run --detach`,
// holds the container's stdio, writes its CRI-format log,
// records its exit in the state directory and serves a control socket for
// attach, resize, log reopening, state and wait. The runtime service may
// die and restart; the monitor and its container carry on.
//
// This package is imported by cmd/berth-monitor, so it depends on the
// standard library, golang.org/x/sys and berth's own packages that do the
// same (pause) only: every import costs memory in each of the many monitor
// processes.
package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/berth/berth/internal/runtime/pause"
)

// Names of the files a container's state directory holds.
const (
	ConfigFile        = "monitor.json" // Config, written by the runtime before starting the monitor
	PidFile           = "monitor.pid"  // "PID STARTTIME" of the monitor, written by the runtime
	SocketFile        = "control.sock" // the monitor's control socket
	ExitFile          = "exit.json"    // ExitStatus, written once the container has exited
	StartedFile       = "started.json" // time the container was started
	RuncLogFile       = "runc.log"     // runc's own log (JSON lines), for error messages
	ContainerPidFile  = "container.pid"
	MonitorLogFile    = "monitor.log"
	consoleSocketFile = "console.sock"
)

// Config tells a monitor which container to run and how.
type Config struct {
	ID         string `json:"id"`
	Bundle     string `json:"bundle"`
	RuncBinary string `json:"runcBinary"`
	RuncRoot   string `json:"runcRoot"`
	LogPath    string `json:"logPath,omitempty"`
	Terminal   bool   `json:"terminal,omitempty"`
	Stdin      bool   `json:"stdin,omitempty"`
	StdinOnce  bool   `json:"stdinOnce,omitempty"`
	// Pause, when set, is a pod's pause process to start directly instead
	// of running Bundle with runc (see package pause).
	Pause *pause.Process `json:"pause,omitempty"`
}

// ExitStatus is how and when the container's init process ended.
type ExitStatus struct {
	ExitCode   int32     `json:"exitCode"`
	FinishedAt time.Time `json:"finishedAt"`
	OOMKilled  bool      `json:"oomKilled,omitempty"`
	// Error is set when the monitor could not create or run the container.
	Error string `json:"error,omitempty"`
}

// SyncMessage is what the monitor writes on its sync pipe once `runc run --detach`
// has finished: the container's pid, or why it failed.
type SyncMessage struct {
	Pid   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// WriteJSON writes v to path atomically (temp file then rename), so a
// reader after any crash sees either nothing or the whole file.
func WriteJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadJSON reads a file written by WriteJSON.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// ReadExit returns the exit file of a container's state dir
// (an fs.ErrNotExist error while it is still running).
func ReadExit(stateDir string) (ExitStatus, error) {
	var e ExitStatus
	err := ReadJSON(filepath.Join(stateDir, ExitFile), &e)
	return e, err
}

// ReadStarted returns the time the container was started (zero if never).
func ReadStarted(stateDir string) time.Time {
	var t time.Time
	if err := ReadJSON(filepath.Join(stateDir, StartedFile), &t); err != nil {
		return time.Time{}
	}
	return t
}

// Process identifies a process across PID reuse: its PID plus its start
// time in clock ticks since boot (field 22 of /proc/PID/stat).
type Process struct {
	Pid       int
	StartTime uint64
}

// ProcessOf reads the identity of a live process.
func ProcessOf(pid int) (Process, error) {
	st, _, err := procStat(pid)
	if err != nil {
		return Process{}, err
	}
	return Process{Pid: pid, StartTime: st}, nil
}

// Alive reports whether the recorded process still runs, and is the same
// process rather than a newer one that reused its PID. A zombie is not
// alive: after a runtime restart a monitor's parent is init, which may be
// slow to (or, in some containers, never) reap it.
func (p Process) Alive() bool {
	if p.Pid <= 0 {
		return false
	}
	st, state, err := procStat(p.Pid)
	return err == nil && st == p.StartTime && state != "Z" && state != "X"
}

// WriteProcess records a process identity in path.
func WriteProcess(path string, p Process) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %d\n", p.Pid, p.StartTime)), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadProcess reads a process identity written by WriteProcess.
func ReadProcess(path string) (Process, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Process{}, err
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return Process{}, fmt.Errorf("%s: malformed process record", path)
	}
	pid, err1 := strconv.Atoi(f[0])
	st, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return Process{}, fmt.Errorf("%s: malformed process record", path)
	}
	return Process{Pid: pid, StartTime: st}, nil
}

// procStat returns a process's start time and state letter.
func procStat(pid int) (uint64, string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted after its closing parenthesis.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", errors.New("malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, "", errors.New("malformed /proc stat")
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return st, f[0], err
}
