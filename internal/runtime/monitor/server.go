package monitor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// requestTimeout bounds how long a client may take to send its request.
const requestTimeout = 10 * time.Second

// serve answers control connections until ln is closed.
func (m *monitor) serve(ln *net.UnixListener, handlers *sync.WaitGroup) {
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			defer conn.Close()
			m.handle(conn)
		}()
	}
}

func (m *monitor) handle(conn *net.UnixConn) {
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	br := bufio.NewReader(conn)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		respond(conn, Response{Error: "malformed request: " + err.Error()})
		return
	}
	switch req.Op {
	case OpState:
		respond(conn, m.state())
	case OpWait:
		<-m.exitCh
		respond(conn, m.state())
	case OpReopen:
		respond(conn, errResponse(m.crilog.Reopen()))
	case OpAttach:
		m.attach(conn, br, req)
	case OpSignal:
		respond(conn, errResponse(m.signal(syscall.Signal(req.Signal))))
	default:
		respond(conn, Response{Error: "unknown operation " + req.Op})
	}
}

func respond(conn net.Conn, r Response) {
	data, _ := json.Marshal(r)
	_, _ = conn.Write(append(data, '\n'))
}

func errResponse(err error) Response {
	if err != nil {
		return Response{Error: err.Error()}
	}
	return Response{}
}

func (m *monitor) state() Response {
	m.mu.Lock()
	started := m.startedAt
	m.mu.Unlock()
	r := Response{Status: string(m.phase.get()), Pid: m.pid, StartedAt: started, Terminal: m.cfg.Terminal}
	select {
	case <-m.exitCh:
		exit := m.exit
		r.Exit = &exit
	default:
	}
	return r
}

// signal sends sig to the container's init unless it has been reaped: the
// monitor is its parent, so until then its pid cannot have been reused.
// An init that has exited is no error.
func (m *monitor) signal(sig syscall.Signal) error {
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("invalid signal %d", sig)
	}
	if m.pid <= 0 {
		return errors.New("the container has no process")
	}
	return m.reaper.signal(m.pid, sig)
}

// attach streams the container's output to conn and conn's input frames to
// the container until either side ends.
func (m *monitor) attach(conn *net.UnixConn, br *bufio.Reader, req Request) {
	if req.Stdin && m.io.stdin == nil {
		respond(conn, Response{Error: "container was not created with stdin open"})
		return
	}
	c := &attachClient{conn: conn, stdout: req.Stdout, stderr: req.Stderr}
	// Registering under the hub's lock orders the OK before any output frame.
	m.hub.mu.Lock()
	if m.hub.closed {
		m.hub.mu.Unlock()
		respond(conn, Response{Error: "container has exited"})
		return
	}
	respond(conn, Response{Terminal: m.cfg.Terminal})
	m.hub.clients[c] = struct{}{}
	m.hub.mu.Unlock()
	defer m.hub.remove(c)

	buf := make([]byte, 32*1024)
	for {
		kind, p, err := readFrame(br, buf)
		if err != nil {
			return
		}
		switch kind {
		case frameStdin:
			if req.Stdin {
				if _, err := m.io.stdin.Write(p); err != nil && !errors.Is(err, net.ErrClosed) {
					m.log.Debug("write stdin", "err", err)
				}
			}
		case frameResize:
			if len(p) == 4 {
				w, h := uint16(p[0])<<8|uint16(p[1]), uint16(p[2])<<8|uint16(p[3])
				if err := m.io.resize(w, h); err != nil {
					m.log.Debug("resize", "err", err)
				}
			}
		case frameCloseStdin:
			if req.Stdin && m.cfg.StdinOnce {
				m.closeStdin()
			}
		}
	}
}

// closeStdin ends the container's input once (StdinOnce): a pipe is closed;
// a terminal gets end-of-file (^D) instead, as closing the master would
// hang the terminal up.
func (m *monitor) closeStdin() {
	m.stdinOnce.Do(func() {
		if m.io.console != nil {
			_, _ = m.io.stdin.Write([]byte{4})
			return
		}
		m.io.stdin.Close()
	})
}
