package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"k8s.io/cri-streaming/pkg/streaming"
	remotecommand "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/berth/berth/internal/runtime/network"
	"github.com/berth/berth/internal/runtime/oci"
)

// StreamRuntime is the back end the CRI streaming server calls once a
// client has connected to an exec, attach or port-forward URL.
func (s *Server) StreamRuntime() streaming.Runtime { return streamRuntime{s} }

type streamRuntime struct{ s *Server }

func (r streamRuntime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	c, err := r.s.runningContainer(containerID)
	if err != nil {
		return err
	}
	proc, err := execProcess(c, cmd, tty)
	if err != nil {
		return fmt.Errorf("exec process for %s: %w", c.ID, err)
	}
	code, err := r.s.cfg.OCI.Exec(ctx, c.ID, oci.ExecOptions{
		Process: proc, Stdin: in, Stdout: writerOrNil(out), Stderr: writerOrNil(errOut), Resize: relayResize(ctx, resize),
	})
	if err != nil {
		return err
	}
	if code != 0 {
		// The streaming server reports this type's code to the client.
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: int(code)}
	}
	return nil
}

func (r streamRuntime) Attach(ctx context.Context, containerID string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	c, err := r.s.runningContainer(containerID)
	if err != nil {
		return err
	}
	return r.s.cfg.OCI.Attach(ctx, c.ID, oci.AttachOptions{
		Stdin: in, Stdout: writerOrNil(out), Stderr: writerOrNil(errOut), Resize: relayResize(ctx, resize),
	})
}

// PortForward connects stream to port on the pod's localhost, dialling from
// inside the pod's network namespace.
func (r streamRuntime) PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	sb, err := r.s.sandboxes.get(podSandboxID)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	var conn net.Conn
	dial := func() error {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
		return err
	}
	if sb.NetNS == "" {
		err = dial()
	} else {
		err = network.WithNetNS(sb.NetNS, dial)
	}
	if err != nil {
		return fmt.Errorf("dial %s in sandbox %s: %w", addr, sb.ID, err)
	}
	defer conn.Close()
	return pipe(ctx, conn, stream)
}

// pipe copies both ways. It ends when the pod side has sent everything
// (after the client half-closed, or on its own), or when ctx is cancelled.
func pipe(ctx context.Context, pod net.Conn, client io.ReadWriteCloser) error {
	toPod := make(chan error, 1)
	toClient := make(chan error, 1)
	go func() {
		_, err := io.Copy(pod, client)
		if tc, ok := pod.(*net.TCPConn); ok {
			_ = tc.CloseWrite() // the client finished sending
		}
		toPod <- err
	}()
	go func() {
		_, err := io.Copy(client, pod)
		toClient <- err
	}()
	var err error
	select {
	case err = <-toClient:
	case err = <-toPod:
		if err == nil {
			select { // the client is done; let the reply drain
			case err = <-toClient:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	// Closing both ends unblocks whichever copy is still running; its
	// goroutine then exits on its own.
	pod.Close()
	client.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// writerOrNil keeps an absent stream a nil interface, so the monitor
// knows not to forward that stream at all.
func writerOrNil(w io.WriteCloser) io.Writer {
	if w == nil {
		return nil
	}
	return w
}

// relayResize converts the streaming server's resize events to the OCI
// layer's type; the relay ends when either side does.
func relayResize(ctx context.Context, in <-chan remotecommand.TerminalSize) <-chan oci.TerminalSize {
	if in == nil {
		return nil
	}
	out := make(chan oci.TerminalSize)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case sz, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- oci.TerminalSize{Width: sz.Width, Height: sz.Height}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
