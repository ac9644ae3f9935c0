package inprocess

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
)

// listener hands out connected pairs of unix sockets made with
// socketpair(2): no address, no file, nothing another process can reach.
// Sockets rather than an in-memory pipe because the kernel's socket buffers
// grow with a stream's bursts and shrink after them, and net's poller gives
// the deadlines net/http's server needs; a Go pipe either has no buffer
// (net.Pipe: every write waits for its reader) or holds a fixed one per
// connection in the heap (~40 MiB more RSS for berth server's ~40
// in-process watches at 256 KiB each, measured with bench/api).
type listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newListener() *listener {
	return &listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// dial connects a new client socket to the listener's next Accept.
func (l *listener) dial(ctx context.Context) (net.Conn, error) {
	client, server, err := socketPair()
	if err != nil {
		return nil, err
	}
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-l.done:
		err = net.ErrClosed
	}
	client.Close()
	server.Close()
	return nil, fmt.Errorf("in-process dial: %w", err)
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *listener) Addr() net.Addr { return addr{} }

type addr struct{}

func (addr) Network() string { return "in-process" }
func (addr) String() string  { return host }

// socketPair returns the two ends of a new unix stream socket pair as
// net.Conns on Go's poller.
func socketPair() (net.Conn, net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	a, err := fdConn(fds[0])
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, err
	}
	b, err := fdConn(fds[1])
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}

// fdConn wraps fd in a net.Conn; net.FileConn dups it, so fd is closed here.
func fdConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "in-process")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("in-process socket: %w", err)
	}
	return c, nil
}
