// Package pause starts a pod's pause process without an OCI runtime.
//
// A pod whose containers share a PID namespace needs a process to be that
// namespace's init (PID 1, the reaper of orphans): the pause process. Its
// pod's network, UTS and IPC namespaces are pinned files already (see
// nspin), so all it needs is a new PID namespace, the pod's cgroup and a
// confinement, which the kernel's clone and the Go runtime's SysProcAttr
// give: it is born in the pinned namespaces and a new PID namespace,
// chrooted into the pause image's read-only root filesystem, as a non-root
// user with no capabilities (a non-root exec keeps none, and its bounding
// set is empty), with no_new_privs and no supplementary groups, in its own
// session. Starting it so takes a fork
// and an exec where `runc run` took ~50 ms, which was most of a pod's start.
//
// What it does not get, because it runs only the pause image's binary,
// which reads no input: a seccomp filter, a mount namespace and the masked
// paths of a container. The monitor starts it (and so parents it, records
// its exit and reaps it), and this package is linked into cmd/berth-monitor,
// so it depends on the standard library and golang.org/x/sys only.
package pause

import (
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"

	"github.com/berth/berth/internal/runtime/nspin"
)

// Process is a pause process to start, as the runtime hands it to the monitor.
type Process struct {
	Args []string `json:"args"` // Args[0] is a path inside Root
	Env  []string `json:"env,omitempty"`
	// Root is the pause image's root filesystem, mounted read-only.
	Root string `json:"root"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	// Namespaces are the pod's pinned namespaces to be born in; a type
	// absent is the host's (host networking, host IPC).
	Namespaces map[nspin.Type]string `json:"namespaces,omitempty"`
	// UIDMappings and GIDMappings, for a user-namespaced pod, make the
	// process create the pod's namespaces instead of joining pinned ones: a
	// user namespace with these mappings and, owned by it, new network, UTS,
	// IPC and PID namespaces, which the runtime then pins. UID and GID are
	// then IDs inside it.
	UIDMappings []IDMap `json:"uidMappings,omitempty"`
	GIDMappings []IDMap `json:"gidMappings,omitempty"`
	// CgroupsPath is the process's cgroup inside each hierarchy, as an OCI
	// spec's cgroupsPath for the cgroupfs driver: /PARENT/SANDBOX_ID.
	CgroupsPath string `json:"cgroupsPath"`
	OOMScoreAdj int    `json:"oomScoreAdj"`
}

// IDMap maps Size IDs from ContainerID inside a user namespace onto HostID
// on the host, as a line of /proc/PID/uid_map does.
type IDMap struct {
	ContainerID uint32 `json:"containerID"`
	HostID      uint32 `json:"hostID"`
	Size        uint32 `json:"size"`
}

// maps reports whether id (inside the namespace) is in one of the mappings.
func maps(m []IDMap, id uint32) bool {
	for _, e := range m {
		if id >= e.ContainerID && uint64(id) < uint64(e.ContainerID)+uint64(e.Size) {
			return true
		}
	}
	return false
}

// UserNamespaced reports whether p creates its pod's user namespace.
func (p Process) UserNamespaced() bool { return len(p.UIDMappings) > 0 }

// Validate checks what Start relies on.
func (p Process) Validate() error {
	userns := p.UserNamespaced()
	switch {
	case userns && (len(p.Namespaces) > 0 || len(p.GIDMappings) == 0):
		return errors.New("pause: a user-namespaced pause process creates its namespaces and needs both ID mappings")
	case userns && (!maps(p.UIDMappings, p.UID) || !maps(p.GIDMappings, p.GID)):
		return fmt.Errorf("pause: user %d:%d is not mapped into the pod's user namespace", p.UID, p.GID)
	case !userns && len(p.GIDMappings) > 0:
		return errors.New("pause: GID mappings without UID mappings")
	}
	switch {
	case len(p.Args) == 0 || !path.IsAbs(p.Args[0]):
		return fmt.Errorf("pause: the command %q is not an absolute path", p.Args)
	case !filepath.IsAbs(p.Root):
		return fmt.Errorf("pause: root %q is not absolute", p.Root)
	case p.UID == 0:
		return errors.New("pause: the pause process never runs as root")
	case !path.IsAbs(p.CgroupsPath) || path.Clean(p.CgroupsPath) != p.CgroupsPath || p.CgroupsPath == "/":
		return fmt.Errorf("pause: cgroups path %q is not a clean absolute path below the root", p.CgroupsPath)
	case p.OOMScoreAdj < -1000 || p.OOMScoreAdj > 1000:
		return fmt.Errorf("pause: oom_score_adj %d is outside [-1000, 1000]", p.OOMScoreAdj)
	}
	return nil
}

// Start starts the pause process through start, which must start cmd (the
// monitor registers it with its reaper as it does), and returns its pid. A
// process that started but could not be placed in its cgroups is killed
// again; start's caller still reaps it.
func Start(p Process, start func(cmd *exec.Cmd) error) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	groups, err := createCgroups(p.CgroupsPath)
	if err != nil {
		return 0, err
	}
	cmd := command(p)
	err = nspin.EnterAll(p.Namespaces, func() error {
		// Locked once more and never unlocked: confine drops privileges of
		// this thread for its child to inherit, so the thread must end with
		// this goroutine instead of serving Go again.
		runtime.LockOSThread()
		if err := confine(); err != nil {
			return err
		}
		return start(cmd)
	})
	if err != nil {
		_ = removeCgroups(groups)
		return 0, fmt.Errorf("pause: start %s: %w", p.Args[0], err)
	}
	pid := cmd.Process.Pid
	if err := place(pid, groups, p.OOMScoreAdj); err != nil {
		_ = cmd.Process.Kill()
		return 0, err
	}
	return pid, nil
}
