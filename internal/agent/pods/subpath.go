package pods

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
	"k8s.io/mount-utils"
)

// subPathsDir is where the bind mounts of prepared subPaths live, below the
// pod's directory, as in the kubelet's pod directory.
const subPathsDir = "volume-subpaths"

// newSubpather is the kubelet's subPath preparer over the host's mount(8).
// Both are stateless, so each use makes its own.
func newSubpather() subpath.Interface { return subpath.New(mount.New("")) }

func (m *Manager) podDir(uid types.UID) string {
	return filepath.Join(m.cfg.DataDir, "pods", string(uid))
}

// subPathHostPath prepares the subPath (or subPathExpr) of vm, the index-th
// volumeMount of c, in the volume at volumePath, and returns the host path
// CRI should bind instead of the volume. As the kubelet's makeMounts: the
// subPath is checked as text, created if missing without leaving the volume
// through a symlink, then opened component by component without following
// symlinks and bind-mounted from that open file under the pod's
// volume-subpaths directory. A runtime that binds the returned path
// follows no path a container could have changed, so a symlink a
// container planted in the volume never reaches the host's files.
// It returns volumePath unchanged when vm has no subPath.
func (m *Manager) subPathHostPath(pod *corev1.Pod, c *corev1.Container, index int, vm corev1.VolumeMount, volumePath string, env map[string]string) (string, error) {
	sub, err := subPathOf(vm, env)
	if err != nil {
		return "", fmt.Errorf("volumeMount %q: subPathExpr %q: %w", vm.Name, vm.SubPathExpr, err)
	}
	if sub == "" {
		return volumePath, nil
	}
	if err := checkSubPath(sub); err != nil {
		return "", fmt.Errorf("volumeMount %q: subPath %q %w", vm.Name, sub, err)
	}
	sp := newSubpather()
	path := filepath.Join(volumePath, sub)
	if err := makeSubPathDir(sp, sub, volumePath, path); err != nil {
		// The detail (which may describe the host's files) goes to the log
		// only, as the kubelet's.
		m.log.Warn("create subPath directory", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "volumeMount", vm.Name, "err", err)
		return "", fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", vm.Name, c.Name)
	}
	bound, _, err := sp.PrepareSafeSubpath(subpath.Subpath{
		VolumeMountIndex: index,
		Path:             path,
		VolumeName:       vm.Name,
		VolumePath:       volumePath,
		PodDir:           m.podDir(pod.UID),
		ContainerName:    c.Name,
	})
	if err != nil {
		m.log.Warn("prepare subPath", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "volumeMount", vm.Name, "err", err)
		return "", fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", vm.Name, c.Name)
	}
	return bound, nil
}

// makeSubPathDir creates the subPath sub of volumePath as a directory with
// the volume's mode, its setgid and sticky bits too (an fsGroup volume's
// setgid, a tmpfs's sticky), as the kubelet makes it, when nothing is
// there yet. Something already there (a
// file, a directory, a symlink anywhere) is left for PrepareSafeSubpath to
// judge.
func makeSubPathDir(sp subpath.Interface, sub, volumePath, path string) error {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st, err := os.Stat(volumePath)
	if err != nil {
		return err
	}
	if err := sp.SafeMakeDir(sub, volumePath, st.Mode()); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// subPathOf is vm's subPath, or its subPathExpr expanded with the
// container's environment as the kubelet does (ExpandContainerVolumeMounts):
// a reference to a variable that is unset or empty is an error.
func subPathOf(vm corev1.VolumeMount, env map[string]string) (string, error) {
	if vm.SubPathExpr == "" {
		return vm.SubPath, nil
	}
	var missing []string
	out := expansion.Expand(vm.SubPathExpr, func(key string) string {
		v := env[key]
		if v == "" && !slices.Contains(missing, key) {
			missing = append(missing, key)
		}
		return v
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// checkSubPath refuses what the kubelet refuses before touching the volume:
// an absolute path, or any ".." element (even one that would clean away,
// as volume validation's ValidatePathNoBacksteps).
func checkSubPath(sub string) error {
	if filepath.IsAbs(sub) {
		return errors.New("must not be an absolute path")
	}
	if slices.Contains(strings.Split(filepath.ToSlash(sub), "/"), "..") {
		return errors.New("must not contain '..'")
	}
	return nil
}

// cleanSubPaths unmounts and removes every subPath bind mount of the pod
// whose directory is podDir. An error means something may still be
// mounted there.
func cleanSubPaths(podDir string) error {
	vols, err := os.ReadDir(filepath.Join(podDir, subPathsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read subPath mounts: %w", err)
	}
	sp := newSubpather()
	for _, v := range vols {
		if err := sp.CleanSubPaths(podDir, v.Name()); err != nil {
			return fmt.Errorf("clean subPaths of volume %q: %w", v.Name(), err)
		}
	}
	return nil
}

// mountsUnder lists what is mounted at or below dir, from the mount table.
func mountsUnder(dir string) ([]string, error) {
	mps, err := mount.New("").List()
	if err != nil {
		return nil, fmt.Errorf("list mounts: %w", err)
	}
	var out []string
	for _, mp := range mps {
		if mp.Path == dir || mount.PathWithinBase(mp.Path, dir) {
			out = append(out, mp.Path)
		}
	}
	return out, nil
}
