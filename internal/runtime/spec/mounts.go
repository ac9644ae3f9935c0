package spec

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// setSandboxFiles bind-mounts the pod-wide files (hostname, hosts,
// resolv.conf and the shared /dev/shm) from the sandbox directory, unless
// the container brings its own mount for that path (kubelet mounts its own
// /etc/hosts).
func setSandboxFiles(s *specs.Spec, dir string, ipc runtimeapi.NamespaceMode, own []*runtimeapi.Mount) error {
	if dir == "" {
		return nil
	}
	if !filepath.IsAbs(dir) {
		return invalid("sandbox directory %q is not absolute", dir)
	}
	ownsPath := func(p string) bool {
		return slices.ContainsFunc(own, func(m *runtimeapi.Mount) bool { return filepath.Clean(m.GetContainerPath()) == p })
	}
	ro := s.Root.Readonly
	for _, f := range []string{"hostname", "hosts", "resolv.conf"} {
		dst := "/etc/" + f
		if ownsPath(dst) {
			continue
		}
		opts := []string{"rbind", "rprivate", "rw"}
		if ro {
			opts[2] = "ro"
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "bind", Source: filepath.Join(dir, f), Options: opts})
	}
	if ownsPath("/dev/shm") {
		return nil
	}
	shm := filepath.Join(dir, "shm")
	if ipc == runtimeapi.NamespaceMode_NODE {
		shm = "/dev/shm"
	}
	s.Mounts = append(s.Mounts, specs.Mount{Destination: "/dev/shm", Type: "bind", Source: shm, Options: []string{"rbind", "rprivate", "rw"}})
	return nil
}

// IDMappedMounts lists the mounts of a container that ask for ID mappings
// (the kubelet asks for its pod's on every volume of a user-namespaced pod)
// by where the runtime attaches an idmapped clone of each (see package
// idmap) for runc to bind-mount instead: dir/N for the container's Nth
// mount. The values are the mounts' host paths.
func IDMappedMounts(c *runtimeapi.ContainerConfig, dir string) map[string]string {
	out := map[string]string{}
	for i, m := range c.GetMounts() {
		if len(m.GetUidMappings()) > 0 || len(m.GetGidMappings()) > 0 {
			out[filepath.Join(dir, strconv.Itoa(i))] = m.GetHostPath()
		}
	}
	return out
}

// checkMountIDMappings accepts a mount's ID mappings only if they are its
// pod's: the clone is idmapped through the pod's own user namespace.
func checkMountIDMappings(m *runtimeapi.Mount, pod *runtimeapi.UserNamespace, idmapDir string) error {
	if pod == nil || idmapDir == "" {
		return invalid("mount %q: ID mappings need a pod with a user namespace of its own", m.GetContainerPath())
	}
	same := func(a, b []*runtimeapi.IDMapping) bool {
		return slices.EqualFunc(a, b, func(x, y *runtimeapi.IDMapping) bool {
			return x.GetContainerId() == y.GetContainerId() && x.GetHostId() == y.GetHostId() && x.GetLength() == y.GetLength()
		})
	}
	if !same(m.GetUidMappings(), pod.GetUids()) || !same(m.GetGidMappings(), pod.GetGids()) {
		return invalid("mount %q: its ID mappings must be its pod's user namespace's", m.GetContainerPath())
	}
	return nil
}

// setMounts adds the CRI's mounts as bind mounts with their propagation;
// ones with ID mappings come from their idmapped clones under idmapDir.
func setMounts(s *specs.Spec, mounts []*runtimeapi.Mount, host Host, userns *runtimeapi.UserNamespace, idmapDir string) error {
	for i, m := range mounts {
		dst, src := m.GetContainerPath(), m.GetHostPath()
		if !filepath.IsAbs(dst) || !filepath.IsAbs(src) || strings.ContainsRune(dst+src, 0) {
			return invalid("mount %q -> %q: both paths must be absolute", src, dst)
		}
		if m.GetImage() != nil && m.GetImage().GetImage() != "" {
			return invalid("image volume mounts are not supported")
		}
		if len(m.GetUidMappings()) > 0 || len(m.GetGidMappings()) > 0 {
			if err := checkMountIDMappings(m, userns, idmapDir); err != nil {
				return err
			}
			src = filepath.Join(idmapDir, strconv.Itoa(i))
		}
		dst = filepath.Clean(dst)
		if dst == "/" {
			return invalid("mount %q: cannot mount over the container's root", src)
		}
		opts := []string{"rbind"}
		switch m.GetPropagation() {
		case runtimeapi.MountPropagation_PROPAGATION_PRIVATE:
			opts = append(opts, "rprivate")
		case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
			opts = append(opts, "rslave")
			raiseRootfsPropagation(s, "rslave")
		case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
			opts = append(opts, "rshared")
			raiseRootfsPropagation(s, "rshared")
		default:
			return invalid("mount %q: unknown propagation %v", dst, m.GetPropagation())
		}
		if m.GetReadonly() {
			opts = append(opts, "ro")
		} else {
			opts = append(opts, "rw")
		}
		if m.GetRecursiveReadOnly() {
			if !m.GetReadonly() {
				return invalid("mount %q: recursive read-only needs readonly", dst)
			}
			if m.GetPropagation() != runtimeapi.MountPropagation_PROPAGATION_PRIVATE {
				return invalid("mount %q: recursive read-only needs private propagation", dst)
			}
			if !host.RecursiveReadOnly {
				return invalid("mount %q: recursive read-only mounts are not supported by the OCI runtime", dst)
			}
			opts = append(opts, "rro")
		}
		// A later mount on the same destination replaces the default one
		// (e.g. a volume at /dev/shm).
		s.Mounts = slices.DeleteFunc(s.Mounts, func(x specs.Mount) bool { return x.Destination == dst })
		s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts})
	}
	return nil
}

// raiseRootfsPropagation makes the rootfs at least as shared as a mount in
// it needs: a slave or shared bind mount inside a private rootfs would not
// receive host mounts.
func raiseRootfsPropagation(s *specs.Spec, want string) {
	if s.Linux.RootfsPropagation == "rshared" {
		return
	}
	s.Linux.RootfsPropagation = want
}
