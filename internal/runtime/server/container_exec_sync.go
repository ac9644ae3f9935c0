package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/oci"
)

// maxExecSyncOutput caps what ExecSync buffers per stream, as the kubelet
// does for probes, so a chatty command cannot exhaust the runtime's memory.
const maxExecSyncOutput = 16 << 20

// ExecSync runs a command in a running container and returns its output.
func (s *Server) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	if len(req.GetCmd()) == 0 {
		return nil, invalid("cmd is required")
	}
	c, err := s.containers.get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "container %s is not running", c.ID)
	}
	if req.GetTimeout() > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.GetTimeout())*time.Second)
		defer cancel()
	}
	proc, err := execProcess(c, req.GetCmd(), false)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	stdout := &cappedBuffer{max: maxExecSyncOutput}
	stderr := &cappedBuffer{max: maxExecSyncOutput}
	code, err := s.cfg.OCI.Exec(ctx, c.ID, oci.ExecOptions{Process: proc, Stdout: stdout, Stderr: stderr})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, status.Errorf(codes.DeadlineExceeded, "command %q timed out after %ds", req.GetCmd(), req.GetTimeout())
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "exec in %s: %v", c.ID, err)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code}, nil
}

// execProcess is the container's own process (env, user, cwd,
// capabilities) with cmd in place of its args.
func execProcess(c container, cmd []string, tty bool) (*specs.Process, error) {
	data, err := os.ReadFile(filepath.Join(c.BundleDir, "config.json"))
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, err
	}
	if spec.Process == nil {
		return nil, errors.New("container spec has no process")
	}
	p := *spec.Process
	p.Args = cmd
	p.Terminal = tty
	p.ConsoleSize = nil
	return &p, nil
}

// cappedBuffer keeps the first max bytes written and drops the rest.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}
