package spec

import (
	"path/filepath"
	"slices"
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

// setMounts adds the CRI's mounts as bind mounts with their propagation.
func setMounts(s *specs.Spec, mounts []*runtimeapi.Mount, host Host) error {
	for _, m := range mounts {
		dst, src := m.GetContainerPath(), m.GetHostPath()
		if !filepath.IsAbs(dst) || !filepath.IsAbs(src) || strings.ContainsRune(dst+src, 0) {
			return invalid("mount %q -> %q: both paths must be absolute", src, dst)
		}
		if m.GetImage() != nil && m.GetImage().GetImage() != "" {
			return invalid("image volume mounts are not supported")
		}
		if len(m.GetUidMappings()) > 0 || len(m.GetGidMappings()) > 0 {
			return invalid("idmapped mounts are not supported")
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
