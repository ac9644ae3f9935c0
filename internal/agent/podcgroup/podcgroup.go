// Package podcgroup names the agent's pod cgroups and removes them once
// their pod is gone. The agent gives every sandbox a CRI cgroup_parent in
// the kubelet's cgroupfs layout (/kubepods[/besteffort|/burstable]/podUID);
// the runtime creates the containers' cgroups under it and runc creates the
// parent, but CRI runtimes never remove it: as the kubelet, the agent owns
// pod cgroups and removes them (the kubelet's pod container manager and its
// cleanupOrphanedPodCgroups).
//
// Removal is rmdir only, empty descendants first: a cgroup that still holds
// processes or busy children is left for a later sweep. Failures are
// logged, never fatal, so an agent without write access to the cgroup
// filesystems still runs.
package podcgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's cgroupfs QoS parents, inside each hierarchy.
const (
	podsParent       = "/kubepods"
	besteffortParent = "/kubepods/besteffort"
	burstableParent  = "/kubepods/burstable"
	podDirPrefix     = "pod"
)

// qosParents are where pod cgroups live, in every hierarchy.
func qosParents() []string { return []string{podsParent, besteffortParent, burstableParent} }

// Parent is the cgroup parent of pod uid of QoS class qos, as the kubelet's
// cgroupfs driver names it.
func Parent(qos corev1.PodQOSClass, uid types.UID) string {
	switch qos {
	case corev1.PodQOSGuaranteed:
		return path.Join(podsParent, podDirPrefix+string(uid))
	case corev1.PodQOSBestEffort:
		return path.Join(besteffortParent, podDirPrefix+string(uid))
	default:
		return path.Join(burstableParent, podDirPrefix+string(uid))
	}
}

// OS is what the Cleaner needs of the cgroup filesystems; HostOS is the
// machine's, tests use a fake.
type OS interface {
	// Hierarchies returns the mount points of the cgroup hierarchies: each
	// mounted v1 hierarchy (named ones such as name=systemd included) and
	// the v2 unified one.
	Hierarchies() ([]string, error)
	// SubDirs returns the names of dir's subdirectories (a cgroup's child
	// cgroups); an error wrapping fs.ErrNotExist when dir does not exist.
	SubDirs(dir string) ([]string, error)
	// Rmdir removes the directory dir (a cgroup); it fails with EBUSY or
	// ENOTEMPTY while the cgroup holds processes or children.
	Rmdir(dir string) error
}

// Cleaner removes pod cgroups. A nil *Cleaner removes nothing.
type Cleaner struct {
	fs  OS
	log *slog.Logger

	// mounted is the hierarchies, read once: cgroup filesystems are
	// mounted at boot, and a sweep of many orphans would otherwise read the
	// whole mount table again for each.
	mu      sync.Mutex
	mounted []string
}

// NewCleaner returns a Cleaner working on fs.
func NewCleaner(fs OS, log *slog.Logger) *Cleaner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Cleaner{fs: fs, log: log}
}

// RemovePod removes pod uid's cgroup, under whichever QoS parent it is, in
// every hierarchy, and returns how many pod directories it removed. A
// cgroup still in use is left (logged at debug: a later sweep retries);
// the error joins the other failures.
func (c *Cleaner) RemovePod(uid types.UID) (int, error) {
	if c == nil || uid == "" {
		return 0, nil
	}
	hierarchies, err := c.hierarchies()
	if err != nil {
		return 0, fmt.Errorf("pod %s cgroups: %w", uid, err)
	}
	removed := 0
	var errs []error
	for _, h := range hierarchies {
		for _, parent := range qosParents() {
			dir := path.Join(h, parent, podDirPrefix+string(uid))
			err := c.removeTree(dir)
			switch {
			case err == nil:
				removed++
			case errors.Is(err, fs.ErrNotExist):
			case inUse(err):
				c.log.Debug("pod cgroup still in use; left for a later sweep", "path", dir, "err", err)
			default:
				errs = append(errs, fmt.Errorf("remove pod cgroup: %w", err))
			}
		}
	}
	if removed > 0 {
		c.log.Debug("removed pod cgroups", "podUID", uid, "directories", removed)
	}
	return removed, errors.Join(errs...)
}

// PodUIDs returns the UIDs of the pods that have a cgroup directory under a
// QoS parent in some hierarchy.
func (c *Cleaner) PodUIDs() ([]types.UID, error) {
	if c == nil {
		return nil, nil
	}
	hierarchies, err := c.hierarchies()
	if err != nil {
		return nil, fmt.Errorf("pod cgroups: %w", err)
	}
	seen := map[types.UID]bool{}
	var out []types.UID
	for _, h := range hierarchies {
		for _, parent := range qosParents() {
			names, err := c.fs.SubDirs(path.Join(h, parent))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("pod cgroups: %w", err)
			}
			for _, name := range names {
				uid, ok := strings.CutPrefix(name, podDirPrefix)
				if !ok || uid == "" || seen[types.UID(uid)] {
					continue
				}
				seen[types.UID(uid)] = true
				out = append(out, types.UID(uid))
			}
		}
	}
	return out, nil
}

// hierarchies returns the mounted hierarchies, read on first use (a
// failure is retried on the next call).
func (c *Cleaner) hierarchies() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mounted == nil {
		h, err := c.fs.Hierarchies()
		if err != nil {
			return nil, err
		}
		c.mounted = h
	}
	return c.mounted, nil
}

// removeTree removes dir after its descendants, deepest first (a crashed
// runtime may leave an empty container cgroup under the pod's). It stops at
// the first descendant it cannot remove: dir cannot go then either.
func (c *Cleaner) removeTree(dir string) error {
	children, err := c.fs.SubDirs(dir)
	if err != nil {
		return err
	}
	for _, child := range children {
		if err := c.removeTree(path.Join(dir, child)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return c.fs.Rmdir(dir)
}

// inUse reports whether err is rmdir's answer for a cgroup that still
// holds processes or children.
func inUse(err error) bool {
	return errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.ENOTEMPTY)
}
