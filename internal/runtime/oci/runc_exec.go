package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/console"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// execWaitDelay bounds how long an exec waits for its output pipes after
// the process exited (a background descendant may keep them open).
const execWaitDelay = 2 * time.Second

// Exec runs `runc exec` for the process and returns its exit code. The
// process is this runtime's child: an exec is a session of its caller and
// ends with it.
func (r *Runc) Exec(ctx context.Context, id string, opts ExecOptions) (int32, error) {
	dir, err := r.existingDir(id)
	if err != nil {
		return 0, err
	}
	if opts.Process == nil || len(opts.Process.Args) == 0 {
		return 0, status.Error(codes.InvalidArgument, "exec needs a command")
	}
	if st, err := r.state(ctx, id, dir); err != nil {
		return 0, err
	} else if st.Status != StatusRunning {
		return 0, status.Errorf(codes.FailedPrecondition, "container %s is %s, not running", id, st.Status)
	}
	tmp, err := os.MkdirTemp("", "berth-exec-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	proc := *opts.Process
	if err := writeJSONFile(filepath.Join(tmp, "process.json"), proc); err != nil {
		return 0, err
	}
	pidFile := filepath.Join(tmp, "pid")
	logFile := filepath.Join(tmp, "runc.log")
	args := []string{"--root", r.cfg.Root, "--log", logFile, "--log-format", "json",
		"exec", "--process", filepath.Join(tmp, "process.json"), "--pid-file", pidFile}
	if proc.Terminal {
		args = append(args, "--tty")
	}
	cmd := exec.CommandContext(ctx, r.cfg.Binary, append(args, id)...)
	cmd.WaitDelay = execWaitDelay
	// When the caller gives up (an ExecSync timeout), the process in the
	// container must die too: killing runc alone would orphan it there.
	// Killing the process makes runc reap it and exit, so when Exec returns
	// it is gone; runc itself is killed only if the process never started
	// (or, after WaitDelay, if runc does not exit).
	cmd.Cancel = func() error {
		// runc writes the pid file just after the process starts, which may
		// be after the process has begun its work: a cancel that comes
		// first waits briefly for it (no notification exists) rather than
		// killing runc and orphaning the process.
		deadline := time.Now().Add(execWaitDelay)
		for !killExecProcess(pidFile) {
			if time.Now().After(deadline) {
				return cmd.Process.Kill()
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	var term *hostTerminal
	if proc.Terminal {
		if term, err = newHostTerminal(cmd, opts); err != nil {
			return 0, fmt.Errorf("exec in %s: %w", id, err)
		}
		defer term.close()
	} else {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
		if cmd.Stdin == nil {
			cmd.Stdin = strings.NewReader("")
		}
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	if term != nil {
		term.started()
	}
	waitErr := cmd.Wait()
	if term != nil {
		term.drain()
	}
	if _, err := os.Stat(pidFile); err != nil {
		// The process never started: runc itself failed.
		return 0, status.Errorf(codes.FailedPrecondition, "exec in %s: %s", id, runcLogError(logFile, waitErr))
	}
	return execExitCode(cmd, waitErr)
}

// killExecProcess kills the exec'd process by the host PID runc recorded;
// false while runc has recorded none (a process already gone counts as
// killed).
func killExecProcess(pidFile string) bool {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return false
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return true
}

func execExitCode(cmd *exec.Cmd, waitErr error) (int32, error) {
	if cmd.ProcessState == nil {
		return 0, waitErr
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int32(ws.Signal()), nil
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return 0, waitErr
	}
	return int32(ws.ExitStatus()), nil
}

// hostTerminal runs a non-detached `runc exec --tty` on a pseudo-terminal
// of ours. runc only accepts a console socket when it detaches, and a
// detached exec would leave the process to be reaped by whoever is the
// subreaper; instead runc makes the container's terminal itself, copies it
// to its own stdio (our terminal's slave side) and on SIGWINCH copies our
// terminal's size to it. So a resize is: set the size on our master.
type hostTerminal struct {
	master console.Console
	slave  *os.File
	opts   ExecOptions
	stop   chan struct{}
	out    sync.WaitGroup // the output copy
	resize sync.WaitGroup // the resize relay, which must end before the master closes
}

func newHostTerminal(cmd *exec.Cmd, opts ExecOptions) (*hostTerminal, error) {
	master, slavePath, err := console.NewPty()
	if err != nil {
		return nil, fmt.Errorf("allocate terminal: %w", err)
	}
	slave, err := os.OpenFile(slavePath, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("open terminal: %w", err)
	}
	// The first size is set before runc starts, since a SIGWINCH it gets
	// before installing its handler would be lost.
	select {
	case sz, ok := <-opts.Resize:
		if ok {
			_ = master.Resize(console.WinSize{Width: sz.Width, Height: sz.Height})
		}
	default:
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// runc gets the terminal as its controlling terminal, so resizes signal it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	return &hostTerminal{master: master, slave: slave, opts: opts, stop: make(chan struct{})}, nil
}

// started drops our slave copy and starts copying.
func (h *hostTerminal) started() {
	h.slave.Close()
	h.out.Add(1)
	go func() {
		defer h.out.Done()
		w := h.opts.Stdout
		if w == nil {
			w = io.Discard
		}
		_, _ = io.Copy(w, h.master) // ends with EIO once runc has exited
	}()
	if h.opts.Stdin != nil {
		// Ends when the caller's reader does, or at the first write after
		// the terminal is closed.
		go func() { _, _ = io.Copy(h.master, h.opts.Stdin) }()
	}
	if h.opts.Resize != nil {
		h.resize.Add(1)
		go func() {
			defer h.resize.Done()
			for {
				select {
				case <-h.stop:
					return
				case sz, ok := <-h.opts.Resize:
					if !ok {
						return
					}
					_ = h.master.Resize(console.WinSize{Width: sz.Width, Height: sz.Height})
				}
			}
		}()
	}
}

// drain waits for the output to be copied, once runc has exited.
func (h *hostTerminal) drain() { h.out.Wait() }

func (h *hostTerminal) close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	h.resize.Wait()
	h.slave.Close()
	h.master.Close()
}

func writeJSONFile(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// runcLogError is the last error runc logged, else the wait error.
func runcLogError(logFile string, waitErr error) string {
	msg := fmt.Sprint(waitErr)
	data, err := os.ReadFile(logFile)
	if err != nil {
		return msg
	}
	for _, line := range strings.Split(string(data), "\n") {
		var entry struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Level == "error" {
			msg = entry.Msg
		}
	}
	return msg
}
