package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth/berth/internal/cgroupfs"
	"github.com/berth/berth/internal/runtime/pause"
)

// drainTimeout bounds how long the monitor keeps reading the container's
// output after its init has exited: a daemonised descendant may hold the
// pipes open for ever.
const drainTimeout = 2 * time.Second

// monitor is one running monitor process's state.
type monitor struct {
	cfg      Config
	stateDir string
	log      *slog.Logger
	reaper   *reaper
	io       *stdio
	crilog   *criLog
	hub      *hub
	phase    lifecycle

	pid       int    // the container's init; set before the control socket serves
	oomPath   string // the container's OOM kill counter file ("" if unknown)
	oomKey    string
	mu        sync.Mutex
	startedAt time.Time     // guarded by mu
	exitCh    chan struct{} // closed once exit is final and recorded
	exit      ExitStatus
	stdinOnce sync.Once
}

// AwaitStart waits for the runtime's go on startPipe: the ID of the
// container this monitor is to run, whose state dir is the monitors'
// directory joined with it. The runtime may start a monitor before it has
// a container for it (see package oci); an empty ID, the pipe closed
// without one, means it never will.
func AwaitStart(startPipe io.Reader) (id string, err error) {
	data, err := io.ReadAll(io.LimitReader(startPipe, 256))
	if err != nil {
		return "", fmt.Errorf("read the start pipe: %w", err)
	}
	id = string(data)
	if id != "" && (id != filepath.Base(id) || strings.Trim(id, ".") == "") {
		return "", fmt.Errorf("start pipe: %q is not a container ID", id)
	}
	return id, nil
}

// Run is the whole life of a monitor once started (see AwaitStart). It
// reads its Config from stateDir (which must also be its working
// directory), creates the container, reports on syncPipe, then serves the
// control socket until the container has exited and its exit is recorded.
func Run(ctx context.Context, stateDir string, syncPipe io.WriteCloser, log *slog.Logger) error {
	var cfg Config
	if err := ReadJSON(filepath.Join(stateDir, ConfigFile), &cfg); err != nil {
		return reportSync(syncPipe, 0, err)
	}
	// Orphaned descendants of the container, and the container itself once
	// `runc run --detach` exits, become our children.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return reportSync(syncPipe, 0, fmt.Errorf("become subreaper: %w", err))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := &monitor{cfg: cfg, stateDir: stateDir, log: log, reaper: newReaper(), hub: newHub(), exitCh: make(chan struct{})}
	m.phase.at = phaseCreating
	go m.reaper.run(ctx)

	ln, err := m.prepare()
	if err != nil {
		return reportSync(syncPipe, 0, err)
	}
	defer ln.Close()
	exitWait, err := m.create(ctx)
	if err != nil {
		m.io.close()
		m.crilog.Close()
		return reportSync(syncPipe, 0, err)
	}
	if err := reportSync(syncPipe, m.pid, nil); err != nil {
		log.Warn("runtime went away before sync", "err", err)
	}
	var handlers sync.WaitGroup
	go m.serve(ln, &handlers)
	outputsDone := m.copyOutputs()
	ws := <-exitWait
	m.finish(ws, outputsDone)
	ln.Close()
	handlers.Wait()
	return nil
}

func reportSync(w io.WriteCloser, pid int, err error) error {
	msg := SyncMessage{Pid: pid}
	if err != nil {
		msg.Error = err.Error()
	}
	data, _ := json.Marshal(msg)
	_, werr := w.Write(data)
	w.Close()
	if err != nil {
		return err
	}
	return werr
}

// prepare opens the log, the stdio and the control socket.
func (m *monitor) prepare() (*net.UnixListener, error) {
	var err error
	if m.crilog, err = openCRILog(m.cfg.LogPath, time.Now); err != nil {
		return nil, fmt.Errorf("open container log: %w", err)
	}
	if m.io, err = newStdio(m.cfg); err != nil {
		return nil, err
	}
	_ = os.Remove(SocketFile)
	// Relative to our working directory (the state dir): see listenConsole.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: SocketFile, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// createTimeout bounds `runc run --detach`; the runtime's own timeout on
// the sync pipe is the one the caller sees.
const createTimeout = 2 * time.Minute

func (m *monitor) runc(args ...string) *exec.Cmd {
	base := []string{"--root", m.cfg.RuncRoot, "--log", filepath.Join(m.stateDir, RuncLogFile), "--log-format", "json"}
	return exec.Command(m.cfg.RuncBinary, append(base, args...)...)
}

// create starts the container: the pause process directly, anything else
// with `runc run --detach`.
func (m *monitor) create(ctx context.Context) (<-chan unix.WaitStatus, error) {
	if m.cfg.Pause != nil {
		return m.createPause()
	}
	return m.runcRun(ctx)
}

// createPause starts a pod's pause process in the pod's namespaces and
// cgroups, as this monitor's child (see package pause).
func (m *monitor) createPause() (<-chan unix.WaitStatus, error) {
	startedAt := time.Now()
	var exited <-chan unix.WaitStatus
	pid, err := pause.Start(*m.cfg.Pause, func(cmd *exec.Cmd) error {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = m.io.child[0], m.io.child[1], m.io.child[2]
		var err error
		exited, err = m.reaper.start(cmd)
		return err
	})
	if err != nil {
		_ = m.phase.to(phaseStopped)
		return nil, err
	}
	m.pid = pid
	m.io.afterCreate()
	if err := m.phase.to(phaseCreated); err != nil {
		return nil, err
	}
	if err := m.started(startedAt); err != nil {
		return nil, err
	}
	return exited, nil
}

// runcRun runs `runc run --detach` (create and start in one runc process)
// with the container's stdio and returns a channel that receives the
// container's exit status.
func (m *monitor) runcRun(ctx context.Context) (<-chan unix.WaitStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, createTimeout)
	defer cancel()
	pidFile := filepath.Join(m.stateDir, ContainerPidFile)
	args := []string{"run", "--detach", "--bundle", m.cfg.Bundle, "--pid-file", pidFile}
	// The user process begins during `runc run`, possibly exiting before it
	// returns: the start time is taken before, so it never follows the
	// finish time.
	startedAt := time.Now()
	if m.io.console != nil {
		args = append(args, "--console-socket", m.io.console.path)
	}
	cmd := m.runc(append(args, m.cfg.ID)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = m.io.child[0], m.io.child[1], m.io.child[2]
	consoleErr := make(chan error, 1)
	if m.io.console != nil {
		go func() { consoleErr <- m.io.console.receive(ctx) }()
	}
	ws, err := m.reaper.runCmd(ctx, cmd)
	if err == nil && ws.ExitStatus() != 0 {
		err = fmt.Errorf("runc run: %s", runcError(filepath.Join(m.stateDir, RuncLogFile), ws))
	}
	if m.io.console != nil {
		if err != nil {
			m.io.console.listener.Close()
		}
		if cerr := <-consoleErr; err == nil && cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		_ = m.phase.to(phaseStopped)
		return nil, err
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return nil, fmt.Errorf("container pid: %w", err)
	}
	if m.pid, err = strconv.Atoi(string(trimSpace(data))); err != nil {
		return nil, fmt.Errorf("container pid: %w", err)
	}
	m.io.afterCreate()
	if m.oomPath, m.oomKey, err = m.containerOOMCounter(); err != nil {
		m.log.Warn("OOM kills will not be detected", "err", err)
	}
	if err := m.phase.to(phaseCreated); err != nil {
		return nil, err
	}
	exited := m.reaper.expect(m.pid)
	if err := m.started(startedAt); err != nil {
		return nil, err
	}
	return exited, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// runcError is the last error runc logged, or its exit status.
func runcError(logPath string, ws unix.WaitStatus) string {
	msg := fmt.Sprintf("exit status %d", exitCode(ws))
	f, err := os.Open(logPath)
	if err != nil {
		return msg
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var line struct{ Level, Msg string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Level == "error" {
			msg = line.Msg
		}
	}
	return msg
}

// started records that the user process began at now and moves to running.
func (m *monitor) started(now time.Time) error {
	if err := WriteJSON(filepath.Join(m.stateDir, StartedFile), now); err != nil {
		m.log.Warn("record start time", "err", err)
	}
	m.mu.Lock()
	m.startedAt = now
	m.mu.Unlock()
	// The container may already have exited and been recorded stopped.
	if err := m.phase.to(phaseRunning); err != nil && m.phase.get() != phaseStopped {
		return err
	}
	return nil
}

// copyOutputs copies each output stream into the log and to attached
// clients; the returned channel closes when all streams have ended.
func (m *monitor) copyOutputs() <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, o := range m.io.outputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind := frameStdout
			if o.stream == "stderr" {
				kind = frameStderr
			}
			split := &lineSplitter{log: m.crilog, stream: o.stream}
			buf := make([]byte, 32*1024)
			for {
				n, err := o.r.Read(buf)
				if n > 0 {
					_, _ = split.Write(buf[:n])
					m.hub.publish(kind, buf[:n])
				}
				if err != nil {
					// EIO is how a terminal master reports the slave side closed.
					split.Flush()
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	return done
}

// finish records the container's exit once its output is drained.
func (m *monitor) finish(ws unix.WaitStatus, outputsDone <-chan struct{}) {
	select {
	case <-outputsDone:
	case <-time.After(drainTimeout):
		for _, o := range m.io.outputs {
			_ = o.r.SetReadDeadline(time.Now())
		}
		<-outputsDone
	}
	exit := ExitStatus{ExitCode: exitCode(ws), FinishedAt: time.Now(), OOMKilled: m.oomKilled()}
	if err := WriteJSON(filepath.Join(m.stateDir, ExitFile), exit); err != nil {
		m.log.Error("record exit", "err", err)
	}
	if m.cfg.Pause != nil {
		// runc removes a container's cgroup on delete; the pause process's
		// are the monitor's to remove, now that nothing is in them.
		if err := pause.RemoveCgroups(m.cfg.Pause.CgroupsPath); err != nil {
			m.log.Warn("remove the pause process's cgroups", "err", err)
		}
	}
	m.exit = exit
	_ = m.phase.to(phaseStopped)
	close(m.exitCh)
	m.hub.closeAll()
	m.io.close()
	m.crilog.Close()
}

// containerOOMCounter locates the container's OOM kill counter from its
// bundle's cgroups path, or, for a relative one, from its process.
func (m *monitor) containerOOMCounter() (path, key string, err error) {
	cgroupsPath, err := bundleCgroupsPath(m.cfg.Bundle)
	if err != nil {
		return "", "", err
	}
	if !filepath.IsAbs(cgroupsPath) {
		return oomCounter(m.pid)
	}
	mounts, err := cgroupfs.HostMounts()
	if err != nil {
		return "", "", err
	}
	return oomCounterAt(cgroupsPath, mounts)
}

func (m *monitor) oomKilled() bool {
	if m.oomPath == "" {
		return false
	}
	n, err := oomKills(m.oomPath, m.oomKey)
	if err != nil {
		m.log.Warn("read OOM kill count", "err", err)
	}
	return n > 0
}
