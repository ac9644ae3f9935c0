package monitor

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrGone means no monitor answers on the container's control socket.
var ErrGone = errors.New("monitor is not running")

// ErrRefused wraps the monitor's own refusal of a request (for example an
// attach to a container that has exited).
var ErrRefused = errors.New("monitor refused")

// maxSocketPath is the longest path a unix socket address holds here.
const maxSocketPath = 100

// dial connects to the control socket in stateDir. A long state dir is
// reached through a directory descriptor (/proc/self/fd/N/...), since a
// socket address holds at most 108 bytes.
func dial(ctx context.Context, stateDir string) (*net.UnixConn, error) {
	path := filepath.Join(stateDir, SocketFile)
	if len(path) > maxSocketPath {
		fd, err := unix.Open(stateDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrGone, err)
		}
		defer unix.Close(fd)
		path = fmt.Sprintf("/proc/self/fd/%d/%s", fd, SocketFile)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %v", ErrGone, err)
	}
	return conn.(*net.UnixConn), nil
}

// Call sends one request to the monitor of the container in stateDir and
// returns its answer. A monitor-side failure comes back as an error.
func Call(ctx context.Context, stateDir string, req Request) (Response, error) {
	conn, err := dial(ctx, stateDir)
	if err != nil {
		return Response{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	resp, _, err := roundTrip(conn, req)
	if err != nil && ctx.Err() != nil {
		return Response{}, ctx.Err()
	}
	return resp, err
}

func roundTrip(conn net.Conn, req Request) (Response, *bufio.Reader, error) {
	data, _ := json.Marshal(req)
	if _, err := conn.Write(append(data, '\n')); err != nil {
		return Response{}, nil, fmt.Errorf("%w: %v", ErrGone, err)
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadBytes('\n')
	if err != nil {
		// The monitor exits right after the container: a closed connection
		// without an answer means it is gone.
		return Response{}, nil, fmt.Errorf("%w: %v", ErrGone, err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return Response{}, nil, fmt.Errorf("malformed monitor response: %w", err)
	}
	if resp.Error != "" {
		return resp, nil, fmt.Errorf("%w: %s", ErrRefused, resp.Error)
	}
	return resp, br, nil
}

// AttachStreams are the caller's ends of an attach session.
type AttachStreams struct {
	Stdin          io.Reader // nil: no input
	Stdout, Stderr io.Writer // nil: not wanted
	Resize         <-chan [2]uint16
}

// Attach connects the streams to the container's stdio until its output
// ends (it exited) or ctx is done. When Stdin reaches EOF the monitor is
// told, which closes the container's stdin if it was created StdinOnce.
func Attach(ctx context.Context, stateDir string, s AttachStreams) error {
	conn, err := dial(ctx, stateDir)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_, br, err := roundTrip(conn, Request{Op: OpAttach, Stdin: s.Stdin != nil, Stdout: s.Stdout != nil, Stderr: s.Stderr != nil})
	if err != nil {
		return err
	}
	var wmu sync.Mutex
	send := func(kind byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return writeFrame(conn, kind, p)
	}
	done := make(chan struct{})
	defer close(done)
	if s.Stdin != nil {
		go pumpStdin(s.Stdin, send)
	}
	if s.Resize != nil {
		go func() {
			for {
				select {
				case <-done:
					return
				case sz, ok := <-s.Resize:
					if !ok {
						return
					}
					var p [4]byte
					binary.BigEndian.PutUint16(p[0:], sz[0])
					binary.BigEndian.PutUint16(p[2:], sz[1])
					if send(frameResize, p[:]) != nil {
						return
					}
				}
			}
		}()
	}
	buf := make([]byte, 32*1024)
	for {
		kind, p, err := readFrame(br, buf)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil // output ended
		}
		var w io.Writer
		switch kind {
		case frameStdout:
			w = s.Stdout
		case frameStderr:
			w = s.Stderr
		}
		if w != nil {
			if _, err := w.Write(p); err != nil {
				return fmt.Errorf("attach output: %w", err)
			}
		}
	}
}

// pumpStdin forwards input until it ends (then says so) or the
// connection fails; it returns when the caller's reader does.
func pumpStdin(r io.Reader, send func(byte, []byte) error) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if send(frameStdin, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			_ = send(frameCloseStdin, nil)
			return
		}
	}
}
