package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// output is one stream the container writes.
type output struct {
	stream string // "stdout" or "stderr"
	r      *os.File
}

// stdio is the monitor's side of the container's standard streams: pipes,
// or a pseudo-terminal master received from runc over a console socket.
type stdio struct {
	child   []*os.File     // runc run's stdin, stdout, stderr; closed once it has run
	stdin   io.WriteCloser // nil unless the container keeps stdin open
	outputs []output
	console *console // terminal containers only
}

type console struct {
	listener *net.UnixListener
	path     string // as runc must dial it
	master   *os.File
}

func newStdio(cfg Config) (*stdio, error) {
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if cfg.Terminal {
		c, err := listenConsole()
		if err != nil {
			devnull.Close()
			return nil, err
		}
		return &stdio{child: []*os.File{devnull, devnull, devnull}, console: c}, nil
	}
	s := &stdio{child: []*os.File{devnull, nil, nil}}
	for i, stream := range []string{"stdout", "stderr"} {
		r, w, err := os.Pipe()
		if err != nil {
			s.close()
			return nil, err
		}
		s.child[i+1] = w
		s.outputs = append(s.outputs, output{stream: stream, r: r})
	}
	if cfg.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			s.close()
			return nil, err
		}
		devnull.Close()
		s.child[0] = r
		s.stdin = w
	}
	return s, nil
}

// listenConsole listens on the console socket runc hands the terminal
// master to. It binds a name relative to the monitor's working directory
// (its state dir) and gives runc a /proc path to it: the state dir's
// absolute path may exceed the 108 bytes a socket address can hold.
func listenConsole() (*console, error) {
	_ = os.Remove(consoleSocketFile)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: consoleSocketFile, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("console socket: %w", err)
	}
	return &console{listener: l, path: fmt.Sprintf("/proc/%d/cwd/%s", os.Getpid(), consoleSocketFile)}, nil
}

// receive accepts runc's connection and takes the terminal master from it.
func (c *console) receive(ctx context.Context) error {
	defer os.Remove(consoleSocketFile)
	defer c.listener.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.listener.SetDeadline(d)
	}
	conn, err := c.listener.AcceptUnix()
	if err != nil {
		return fmt.Errorf("console socket accept: %w", err)
	}
	defer conn.Close()
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := conn.ReadMsgUnix(name, oob)
	if err != nil {
		return fmt.Errorf("console socket read: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return errors.New("console socket: no terminal descriptor received")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return errors.New("console socket: no terminal descriptor received")
	}
	// Non-blocking makes the master pollable, so reads can be cut off.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return err
	}
	c.master = os.NewFile(uintptr(fds[0]), string(name[:n]))
	return nil
}

// afterCreate drops the ends that now belong to the container and, for a
// terminal, makes the master the container's stdio.
func (s *stdio) afterCreate() {
	for _, f := range s.child {
		if f != nil {
			f.Close()
		}
	}
	s.child = nil
	if s.console != nil && s.console.master != nil {
		s.outputs = []output{{stream: "stdout", r: s.console.master}}
		s.stdin = s.console.master
	}
}

// resize sets a terminal's window size; it is a no-op without a terminal.
func (s *stdio) resize(width, height uint16) error {
	if s.console == nil || s.console.master == nil {
		return nil
	}
	ws := &unix.Winsize{Col: width, Row: height}
	rc, err := s.console.master.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) { ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) })
	return errors.Join(err, ioErr)
}

func (s *stdio) close() {
	for _, f := range s.child {
		if f != nil {
			f.Close()
		}
	}
	for _, o := range s.outputs {
		o.r.Close()
	}
	if s.stdin != nil {
		s.stdin.Close()
	}
	if s.console != nil {
		s.console.listener.Close()
	}
}
