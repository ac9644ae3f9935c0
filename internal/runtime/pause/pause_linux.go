package pause

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth/berth/internal/cgroupfs"
)

// command is the pause process's exec.Cmd. Forked on a thread that has
// joined the pod's namespaces, the child is born in them.
func command(p Process) *exec.Cmd {
	// A literal, not exec.Command: the path is inside Root, not the host's.
	cmd := &exec.Cmd{
		Path: p.Args[0],
		Args: p.Args,
		Env:  p.Env,
		Dir:  "/",
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     p.Root,
			Credential: &syscall.Credential{Uid: p.UID, Gid: p.GID, Groups: []uint32{}},
			Setsid:     true,
			Cloneflags: unix.CLONE_NEWPID,
		},
	}
	if p.UserNamespaced() {
		// The user namespace is created first, so it owns the others. Go
		// writes the mappings from this side before the child goes on to
		// chroot (still as the namespace's root, whose host ID must be
		// able to reach Root) and to take its user.
		cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC
		cmd.SysProcAttr.UidMappings = sysIDMaps(p.UIDMappings)
		cmd.SysProcAttr.GidMappings = sysIDMaps(p.GIDMappings)
		// The pod's containers may set their supplementary groups.
		cmd.SysProcAttr.GidMappingsEnableSetgroups = true
	}
	return cmd
}

func sysIDMaps(m []IDMap) []syscall.SysProcIDMap {
	out := make([]syscall.SysProcIDMap, len(m))
	for i, e := range m {
		out[i] = syscall.SysProcIDMap{ContainerID: int(e.ContainerID), HostID: int(e.HostID), Size: int(e.Size)}
	}
	return out
}

// confine sets no_new_privs and empties the capability bounding set of the
// calling thread, which the process it then forks inherits: the pause
// process can never gain a privilege, even through a set-user-ID file.
// Both are attributes of the thread, not of the whole monitor.
func confine() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("pause: set no_new_privs: %w", err)
	}
	data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("pause: cap_last_cap: %w", err)
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("pause: drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// cgroupDirs are the process's cgroup directories, one per hierarchy it
// joins. The v1 cpuset hierarchy is left out: a new cpuset cgroup holds no
// CPUs until its cpus and mems are copied from its parents, and the pause
// process has no use for one.
func cgroupDirs(cgroupsPath string) ([]string, error) {
	mounts, err := cgroupfs.HostMounts()
	if err != nil {
		return nil, fmt.Errorf("pause: %w", err)
	}
	var dirs []string
	for _, m := range mounts {
		if !m.V2 && m.Has("cpuset") {
			continue
		}
		dirs = append(dirs, filepath.Join(m.Dir, cgroupsPath))
	}
	return dirs, nil
}

func createCgroups(cgroupsPath string) ([]string, error) {
	dirs, err := cgroupDirs(cgroupsPath)
	if err != nil {
		return nil, err
	}
	for i, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			_ = removeCgroups(dirs[:i])
			return nil, fmt.Errorf("pause: create cgroup: %w", err)
		}
	}
	return dirs, nil
}

// place moves the started process into its cgroups and sets its OOM score.
func place(pid int, groups []string, oomScoreAdj int) error {
	p := []byte(strconv.Itoa(pid))
	for _, dir := range groups {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), p, 0); err != nil {
			return fmt.Errorf("pause: join cgroup: %w", err)
		}
	}
	oom := []byte(strconv.Itoa(oomScoreAdj))
	if err := os.WriteFile(filepath.Join("/proc", strconv.Itoa(pid), "oom_score_adj"), oom, 0); err != nil {
		return fmt.Errorf("pause: set oom_score_adj: %w", err)
	}
	return nil
}

func removeCgroups(dirs []string) error {
	var errs []error
	for _, dir := range dirs {
		if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("pause: remove cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// RemoveCgroups removes the cgroups of a pause process that has exited.
// Ones already gone are no error.
func RemoveCgroups(cgroupsPath string) error {
	dirs, err := cgroupDirs(cgroupsPath)
	if err != nil {
		return err
	}
	return removeCgroups(dirs)
}

// KillCgroups SIGKILLs every process in the pause process's cgroups and
// waits for each to end: the way to end a pause process whose monitor (its
// parent, which knows its pid for sure) is gone. The pause process's
// cgroups hold nothing else.
func KillCgroups(cgroupsPath string) error {
	dirs, err := cgroupDirs(cgroupsPath)
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pause: %w", err))
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil && pid > 0 {
				errs = append(errs, killAndWait(pid))
			}
		}
	}
	return errors.Join(errs...)
}

// killWait bounds the wait for a SIGKILLed process to end.
const killWait = 10 * time.Second

// killAndWait SIGKILLs pid through a pidfd, which also tells when it has
// exited (and left its cgroups, which can then be removed).
func killAndWait(pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pause: pidfd of %d: %w", pid, err)
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pause: kill %d: %w", pid, err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(killWait.Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("pause: wait for %d: %w", pid, err)
		case n == 0:
			return fmt.Errorf("pause: %d has not exited %v after SIGKILL", pid, killWait)
		}
		return nil
	}
}
