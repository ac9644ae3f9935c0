package pods

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

// volumeDir is where the agent keeps pod volumes on the host.
func (m *Manager) volumeDir(pod *corev1.Pod, name string) string {
	return filepath.Join(m.cfg.DataDir, "pods", string(pod.UID), "volumes", name)
}

// prepareVolumes makes every volume of pod present on the host and returns
// the host path of each. Content volumes (configMap, secret, downwardAPI,
// projected) are rewritten on every sync, so changed sources reach mounted
// files; each file is replaced atomically.
func (m *Manager) prepareVolumes(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	paths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		p, err := m.prepareVolume(ctx, pod, v)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		paths[v.Name] = p
	}
	return paths, nil
}

func (m *Manager) prepareVolume(ctx context.Context, pod *corev1.Pod, v corev1.Volume) (string, error) {
	dir := m.volumeDir(pod, v.Name)
	fsGroup := podFSGroup(pod)
	switch {
	case v.HostPath != nil:
		return hostPathVolume(v.HostPath)
	case v.EmptyDir != nil:
		return dir, m.emptyDirVolume(dir, v.EmptyDir, fsGroup)
	case v.ConfigMap != nil:
		src := v.ConfigMap
		files, err := m.configMapPayload(ctx, pod.Namespace, src.Name, src.Items, modeOr(src.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode), src.DefaultUser, src.Optional)
		return dir, writeVolumeFiles(dir, files, fsGroup, err)
	case v.Secret != nil:
		src := v.Secret
		files, err := m.secretPayload(ctx, pod.Namespace, src.SecretName, src.Items, modeOr(src.DefaultMode, corev1.SecretVolumeSourceDefaultMode), src.DefaultUser, src.Optional)
		return dir, writeVolumeFiles(dir, files, fsGroup, err)
	case v.DownwardAPI != nil:
		src := v.DownwardAPI
		files, err := m.downwardPayload(ctx, pod, src.Items, modeOr(src.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode), src.DefaultUser)
		return dir, writeVolumeFiles(dir, files, fsGroup, err)
	case v.Projected != nil:
		files, err := m.projectedPayload(ctx, pod, v.Name, v.Projected)
		return dir, writeVolumeFiles(dir, files, fsGroup, err)
	case v.Image != nil:
		return "", nil // the runtime mounts the image itself (imageVolumes)
	}
	return "", errors.New("unsupported volume type")
}

func hostPathVolume(hp *corev1.HostPathVolumeSource) (string, error) {
	typ := corev1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	switch typ {
	case corev1.HostPathDirectoryOrCreate:
		return hp.Path, os.MkdirAll(hp.Path, 0o755)
	case corev1.HostPathFileOrCreate:
		f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return "", err
		}
		return hp.Path, f.Close()
	case corev1.HostPathDirectory, corev1.HostPathFile:
		st, err := os.Stat(hp.Path)
		if err != nil {
			return "", err
		}
		if st.IsDir() != (typ == corev1.HostPathDirectory) {
			return "", fmt.Errorf("%s is not a %s", hp.Path, typ)
		}
	}
	return hp.Path, nil
}

// emptyDirVolume creates the directory; medium Memory mounts a tmpfs
// bounded by sizeLimit there. A directory set up now (created, or given its
// tmpfs) gets the pod's fsGroup as upstream's emptyDir plugin gives it, once:
// what containers write there later keeps the owner they give it. As
// upstream's, a failed ownership change does not fail the volume.
func (m *Manager) emptyDirVolume(dir string, ed *corev1.EmptyDirVolumeSource, fsGroup *int64) error {
	setUp, err := emptyDirSetUp(dir, ed)
	if err != nil || !setUp || fsGroup == nil {
		return err
	}
	if err := setVolumeOwnership(dir, fsGroup, false); err != nil {
		m.log.Warn("emptyDir ownership", "path", dir, "fsGroup", *fsGroup, "err", err)
	}
	return nil
}

// emptyDirSetUp makes dir the emptyDir and reports whether it set it up
// now rather than finding it in place.
func emptyDirSetUp(dir string, ed *corev1.EmptyDirVolumeSource) (bool, error) {
	_, statErr := os.Lstat(dir)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return false, err
	}
	if ed.Medium != corev1.StorageMediumMemory {
		if !created {
			return false, nil
		}
		// World-writable like the kubelet's, so non-root containers can share it.
		return true, os.Chmod(dir, 0o777)
	}
	if isMountPoint(dir) {
		return false, nil
	}
	// 1777 is tmpfs' own default, which the kubelet's mount keeps: open to
	// every container's user, each file removable only by its owner.
	opts := "mode=1777"
	if ed.SizeLimit != nil && !ed.SizeLimit.IsZero() {
		opts += fmt.Sprintf(",size=%d", ed.SizeLimit.Value())
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return false, fmt.Errorf("mount tmpfs: %w", err)
	}
	return true, nil
}

func isMountPoint(dir string) bool {
	var st, parent syscall.Stat_t
	if syscall.Stat(dir, &st) != nil || syscall.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// writeVolumeFiles writes a content volume's payload into dir with the
// kubelet's own AtomicWriter, as its volume plugins do. It refuses a path
// that is absolute, has a '..' element or starts with '..' (items[].path is
// the user's choice), writes each version into a fresh directory no
// container can reach, and publishes it by renaming the ..data symlink: a
// container sees one whole version or the next, and a removed key
// disappears with its version. The pod's fsGroup is applied to each new
// version before it is published, read-only, as upstream's plugins do
// through the writer's setPerms hook; an unchanged payload is not
// rewritten, so ownership is not walked again on every sync.
func writeVolumeFiles(dir string, files payload, fsGroup *int64, err error) error {
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := dropFlatLayout(dir); err != nil {
		return err
	}
	w, err := volumeutil.NewAtomicWriter(dir, "volume "+filepath.Base(dir))
	if err != nil {
		return err
	}
	setPerms := func(string) error {
		// The whole volume, not only the new version: on the first write
		// the links beside ..data are new too.
		return setVolumeOwnership(dir, fsGroup, true)
	}
	if err := w.Write(files, setPerms); err != nil {
		return fmt.Errorf("write files: %w", err)
	}
	return nil
}

// dropFlatLayout empties dir when it holds files written in place, as
// agents before the AtomicWriter did (no ..data link), since the writer
// would leave such a file as it is rather than link the new version there.
func dropFlatLayout(dir string) error {
	if _, err := os.Lstat(filepath.Join(dir, "..data")); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// containerVolumes are what a container's mounts come from: the host paths
// of the pod's prepared volumes, and the images of the image volumes it
// mounts.
type containerVolumes struct {
	paths  map[string]string
	images map[string]*runtimeapi.ImageSpec
}

// volumeMounts turns c's volumeMounts into CRI mounts. A subPath (or
// subPathExpr, expanded with env, the container's environment) is bound
// from a mount the agent prepared, never from a path inside the volume
// (see subPathHostPath); in an image volume the runtime resolves it inside
// the image.
func (m *Manager) volumeMounts(pod *corev1.Pod, c *corev1.Container, vols containerVolumes, env map[string]string) ([]*runtimeapi.Mount, error) {
	readOnlyByType := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		readOnlyByType[v.Name] = v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil || v.Image != nil
	}
	var out []*runtimeapi.Mount
	for i, vm := range c.VolumeMounts {
		mount := &runtimeapi.Mount{
			ContainerPath: vm.MountPath, Readonly: vm.ReadOnly || readOnlyByType[vm.Name], Propagation: mountPropagation(vm),
		}
		if img, ok := vols.images[vm.Name]; ok {
			sub, err := subPathOf(vm, env)
			if err != nil {
				return nil, fmt.Errorf("volumeMount %q: subPathExpr %q: %w", vm.Name, vm.SubPathExpr, err)
			}
			if err := checkSubPath(sub); sub != "" && err != nil {
				return nil, fmt.Errorf("volumeMount %q: subPath %q %w", vm.Name, sub, err)
			}
			mount.Image, mount.ImageSubPath = img, sub
			out = append(out, mount)
			continue
		}
		volumePath, ok := vols.paths[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no such volume", vm.Name)
		}
		host, err := m.subPathHostPath(pod, c, i, vm, volumePath, env)
		if err != nil {
			return nil, err
		}
		mount.HostPath = host
		out = append(out, mount)
	}
	return out, nil
}

func mountPropagation(vm corev1.VolumeMount) runtimeapi.MountPropagation {
	if vm.MountPropagation != nil {
		switch *vm.MountPropagation {
		case corev1.MountPropagationHostToContainer:
			return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
		case corev1.MountPropagationBidirectional:
			return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
		}
	}
	return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
}

// removePodDir unmounts and removes the pod's host directory: its subPath
// bind mounts first (one of them may show a directory of any volume, even
// a hostPath one), then its volumes' own mounts. Files are removed only
// once nothing is mounted below the directory any more.
func (m *Manager) removePodDir(uid string) {
	m.tokens.forget(types.UID(uid))
	dir := m.podDir(types.UID(uid))
	if err := cleanSubPaths(dir); err != nil {
		m.log.Warn("unmount subPaths", "path", dir, "err", err)
		return // never remove files below a mount we could not undo
	}
	vols, _ := filepath.Glob(filepath.Join(dir, "volumes", "*"))
	for _, v := range vols {
		if isMountPoint(v) {
			if err := syscall.Unmount(v, 0); err != nil {
				m.log.Warn("unmount volume", "path", v, "err", err)
				return
			}
		}
	}
	if left, err := mountsUnder(dir); err != nil || len(left) > 0 {
		m.log.Warn("pod directory still has mounts; leaving it", "path", dir, "mounts", left, "err", err)
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		m.log.Warn("remove pod directory", "path", dir, "err", err)
		return // its user namespace range stays taken while its file does
	}
	m.userns.release(types.UID(uid))
}
