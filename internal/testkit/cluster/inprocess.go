package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/berth/berth/internal/testkit/ports"
)

// inProcess is a server run by a function in the test's own process.
type inProcess struct {
	cancel  context.CancelFunc
	done    chan struct{}
	err     error // valid after done is closed
	stopped bool
}

// InProcess runs a server in the test's own process, for a package's tests
// that set what the command line does not offer (certificate lifetimes).
// run is the server (server.Run with a config on dataDir, or a fresh
// directory if it is empty, and the port it is given, on 127.0.0.1 with no
// local agent). InProcess waits until the server answers, and stops it when
// the test ends, failing the test if it returned an error.
func InProcess(t testing.TB, dataDir string, run func(ctx context.Context, dataDir string, port int) error) *Server {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	s := &Server{DataDir: dataDir, Port: ports.Free(t), Kubeconfig: filepath.Join(dataDir, "admin.kubeconfig")}
	s.URL = "https://127.0.0.1:" + strconv.Itoa(s.Port)
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{cancel: cancel, done: make(chan struct{})}
	s.inproc = p
	go func() { p.err = run(ctx, dataDir, s.Port); close(p.done) }()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("server: %v", err)
		}
	})
	s.waitReady(t, p.errExited)
	return s
}

func (p *inProcess) errExited() error {
	select {
	case <-p.done:
		return fmt.Errorf("server returned: %v", p.err)
	default:
		return nil
	}
}

// stop cancels the server's context and returns what it returned; a
// second stop returns nil.
func (p *inProcess) stop() error {
	if p.stopped {
		return nil
	}
	p.stopped = true
	p.cancel()
	<-p.done
	return p.err
}
