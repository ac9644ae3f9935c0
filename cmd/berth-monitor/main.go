// Command berth-monitor is the per-container monitor process that
// `berth runtime` starts (see internal/runtime/monitor). It is a separate,
// small binary rather than a re-exec of berth because one runs per
// container: berth links kubectl and the Kubernetes client libraries,
// whose initialisation alone costs tens of megabytes of RSS per process.
//
// Usage: berth-monitor MONITORS_DIR, with fd 3 the start pipe (read) and
// fd 4 the sync pipe (write), started in its own session. It waits on the
// start pipe for the ID of its container, whose state dir is
// MONITORS_DIR/ID, and exits quietly if the pipe closes without one: the
// runtime starts one monitor ahead of need.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/berth/berth/internal/runtime/monitor"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: berth-monitor MONITORS_DIR (started by berth runtime)")
		os.Exit(2)
	}
	// The monitor outlives its starter: hang-ups and interrupts meant for
	// a terminal or process group are not for it.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)
	// Inherited descriptors are not close-on-exec: without this, every
	// process the monitor starts would hold the pipes too, and the runtime
	// would not see the sync pipe's end until the pause process's exit.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	start, sync := os.NewFile(3, "start-pipe"), os.NewFile(4, "sync-pipe")
	if start == nil || sync == nil {
		fail("start and sync pipes missing")
	}
	id, err := monitor.AwaitStart(start)
	if err != nil {
		fail(err.Error())
	}
	if id == "" {
		os.Exit(0)
	}
	stateDir := filepath.Join(os.Args[1], id)
	if err := os.Chdir(stateDir); err != nil {
		fail(err.Error())
	}
	logFile, err := os.OpenFile(monitor.MonitorLogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fail(err.Error())
	}
	log := slog.New(slog.NewJSONHandler(logFile, nil))
	if err := monitor.Run(context.Background(), stateDir, sync, log); err != nil {
		log.Error("monitor failed", "err", err)
		os.Exit(1)
	}
}

// fail ends a monitor that has no log file yet; the runtime sees its sync
// pipe close without a report.
func fail(msg string) {
	fmt.Fprintln(os.Stderr, "berth-monitor:", msg)
	os.Exit(1)
}
