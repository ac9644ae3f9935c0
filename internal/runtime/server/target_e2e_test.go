package server_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/runtimetest"
	"github.com/berth/berth/internal/testkit/images"
)

// TestTargetPidNamespaceUnderRunc runs what `kubectl debug --target=app`
// asks of the runtime through runc: in a pod whose containers have PID
// namespaces of their own, a container in PID namespace mode TARGET on the
// app container sees the app's process as its PID 1, also when created
// after a runtime restart; once the app is stopped, TARGET on it is refused.
func TestTargetPidNamespaceUnderRunc(t *testing.T) {
	r := runtimetest.Start(t, monitor)
	ctx := t.Context()
	r.Pull(t, images.Busybox)
	p := runPod(t, r, "debugged", runtimeapi.NamespaceMode_CONTAINER, nil)
	app, err := p.createWithPid(t, "app", &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}, "sleep", "3601")
	if err != nil {
		t.Fatalf("CreateContainer app: %v", err)
	}
	p.startAndWait(t, "app", app)
	target := &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: app}
	debug, err := p.createWithPid(t, "debug", target, "sleep", "3602")
	if err != nil {
		t.Fatalf("CreateContainer in TARGET mode: %v", err)
	}
	p.startAndWait(t, "debug", debug)
	appNS := execIn(t, r, app, "readlink /proc/self/ns/pid")
	if got := execIn(t, r, debug, "readlink /proc/self/ns/pid"); got != appNS {
		t.Errorf("debug container's PID namespace %q, want the app's %q", got, appNS)
	}
	seen := processes(t, r, debug)
	if seen["1"] != "sleep 3601" || !hasProcess(seen, "sleep 3602") {
		t.Errorf("debug container sees processes %v, want the app's sleep 3601 as PID 1 and its own sleep 3602", seen)
	}

	r.Restart(t)
	late, err := p.createWithPid(t, "debug-late", target, "sleep", "3603")
	if err != nil {
		t.Fatalf("CreateContainer in TARGET mode after a restart: %v", err)
	}
	p.startAndWait(t, "debug-late", late)
	seen = processes(t, r, late)
	if seen["1"] != "sleep 3601" || !hasProcess(seen, "sleep 3602") || !hasProcess(seen, "sleep 3603") {
		t.Errorf("container created after a restart sees processes %v, want the app's, the first debug container's and its own", seen)
	}

	if _, err := r.Client.Runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: app, Timeout: 0}); err != nil {
		t.Fatalf("StopContainer app: %v", err)
	}
	_, err = p.createWithPid(t, "debug-stopped", target, "sleep", "3604")
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("TARGET on a stopped container: %v, want FailedPrecondition", err)
	}
}

// processes is what a container's /proc lists: command line by pid.
func processes(t *testing.T, r *runtimetest.Runtime, id string) map[string]string {
	t.Helper()
	out := execIn(t, r, id, `for d in /proc/[0-9]*; do echo "${d#/proc/} $(tr '\0' ' ' < $d/cmdline)"; done`)
	seen := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		pid, cmdline, _ := strings.Cut(line, " ")
		seen[pid] = strings.TrimSpace(cmdline)
	}
	return seen
}

func hasProcess(seen map[string]string, cmdline string) bool {
	for _, c := range seen {
		if c == cmdline {
			return true
		}
	}
	return false
}
