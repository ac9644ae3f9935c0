package monitor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// reaper reaps every child of the monitor. The monitor is a child
// subreaper, so besides the runc commands it starts it inherits the
// container's init process (when `runc run --detach` exits) and any orphaned
// descendants; exec.Cmd.Wait cannot be used because a wait4(-1) for those
// would steal its child's status.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan unix.WaitStatus
	// early holds exits of processes nobody waits for yet: the container's
	// init may exit before its pid is known. Once the container is expected
	// the monitor stops keeping other orphans' statuses.
	early     map[int]unix.WaitStatus
	keepEarly bool
}

func newReaper() *reaper {
	return &reaper{waiting: map[int]chan unix.WaitStatus{}, early: map[int]unix.WaitStatus{}, keepEarly: true}
}

// run reaps on every SIGCHLD until ctx ends.
func (r *reaper) run(ctx context.Context) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGCHLD)
	defer signal.Stop(sigs)
	r.reap()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
			r.reap()
		}
	}
}

func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if ch, ok := r.waiting[pid]; ok {
			ch <- ws
			delete(r.waiting, pid)
		} else if r.keepEarly {
			r.early[pid] = ws
		}
	}
}

// start starts cmd and returns a channel that receives its exit status.
// Holding the lock across Start means the reaper cannot reap the child
// before it is registered.
func (r *reaper) start(cmd *exec.Cmd) (<-chan unix.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan unix.WaitStatus, 1)
	r.waiting[cmd.Process.Pid] = ch
	return ch, nil
}

// expect returns a channel that receives the exit status of pid, which
// may already have exited.
func (r *reaper) expect(pid int) <-chan unix.WaitStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan unix.WaitStatus, 1)
	if ws, ok := r.early[pid]; ok {
		ch <- ws
	} else {
		r.waiting[pid] = ch
	}
	r.keepEarly = false
	clear(r.early)
	return ch
}

// signal sends sig to pid if it has not been reaped yet (holding the lock
// the reaper reaps under, so pid cannot be reused meanwhile).
func (r *reaper) signal(pid int, sig unix.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, waiting := r.waiting[pid]; !waiting {
		return nil
	}
	if err := unix.Kill(pid, sig); err != nil && err != unix.ESRCH {
		return fmt.Errorf("signal %d: %w", pid, err)
	}
	return nil
}

// runCmd starts cmd and waits for it (or ctx) through the reaper.
func (r *reaper) runCmd(ctx context.Context, cmd *exec.Cmd) (unix.WaitStatus, error) {
	ch, err := r.start(cmd)
	if err != nil {
		return 0, err
	}
	defer cmd.Process.Release()
	select {
	case ws := <-ch:
		return ws, nil
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		return <-ch, ctx.Err()
	}
}

// exitCode maps a wait status to the shell convention: 128+signal when killed.
func exitCode(ws unix.WaitStatus) int32 {
	if ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ws.ExitStatus())
}
