// Package spec translates a CRI container configuration, together with its
// image's configuration, into the OCI runtime spec that the OCI runtime
// (runc) executes, and a pod's sandbox configuration into its pause process. Everything here is a function of its input plus a
// few read-only looks at the container's rootfs (/etc/passwd, /etc/group) and
// the host (device nodes), so it is table-tested and fuzzed without root.
package spec

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Annotations a container's spec carries, as containerd's and CRI-O's do, so
// that tools reading config.json find its type and sandbox.
const (
	AnnotationContainerType = "io.kubernetes.cri.container-type"
	AnnotationSandboxID     = "io.kubernetes.cri.sandbox-id"
	ContainerTypeContainer  = "container"
)

// DefaultCgroupParent is used when the pod names no cgroup parent.
const DefaultCgroupParent = "/berth"

// Host describes what the host and OCI runtime offer; it is the same for
// every container of one runtime process.
type Host struct {
	// OOMScoreAdjMin is the runtime's own oom_score_adj: without
	// CAP_SYS_RESOURCE a container can never go below it, so requests are
	// raised to it rather than failing in runc.
	OOMScoreAdjMin int
	// RecursiveReadOnly is true when the OCI runtime supports the "rro"
	// mount option (runc >= 1.1 on Linux >= 5.12).
	RecursiveReadOnly bool
	// Capabilities is the runtime's own bounding set: what "privileged"
	// and "add ALL" grant, since runc cannot give more (this host lacks
	// CAP_SYS_RESOURCE, for one). nil reads it from /proc/self/status.
	Capabilities []string
	// UserNamespaces is true when pods may have user namespaces of their
	// own: the kernel has user namespaces and idmapped mounts (through
	// which the runtime gives the pod's root the image's files; see
	// image.RootfsOptions). Whether the image store's filesystem can be
	// idmapped shows only when a container's is mounted.
	UserNamespaces bool
	// Hugetlb is true when the hugetlb cgroup controller is mounted. runc
	// refuses any hugepage limit without it, and the kubelet sends one (0)
	// per page size the kernel has, so the limits are dropped then, as
	// CRI-O drops them.
	Hugetlb bool
}

// Input is everything Generate needs for one application container.
type Input struct {
	ID        string // container ID; the last element of its cgroup path
	SandboxID string
	Sandbox   *runtimeapi.PodSandboxConfig
	Container *runtimeapi.ContainerConfig
	Image     *v1.ConfigFile
	// RootfsPath is the prepared (mounted) root filesystem on the host.
	RootfsPath string
	// SandboxPid is the pause process whose namespaces the container joins
	// through /proc/PID/ns/... where the pod has no pinned one: its PID
	// namespace, and all but the network one for pods of older berth
	// versions, whose pause ran as a container (see SysctlsSet). 0 means
	// the pod has no pause process.
	SandboxPid int
	// UTSNSPath and IPCNSPath are the pod's pinned UTS and IPC namespaces
	// ("" for the host's, or for a pod of an older berth version).
	UTSNSPath string
	IPCNSPath string
	// SysctlsSet says the pod's pause container has set the pod's sysctls
	// in the namespaces it shares (older berth versions ran it with runc).
	// Otherwise they go into every container's spec and runc sets them in
	// the pod's pinned namespaces as the container starts.
	SysctlsSet bool
	// NetNSPath is the pod's network namespace (made for CNI); "" means use
	// the sandbox process's one (or the host's for host networking).
	NetNSPath string
	// UserNSPath is the pod's pinned user namespace, for a pod that has
	// its own (see UserNamespace); "" otherwise.
	UserNSPath string
	// IDMapDir is where the runtime attaches idmapped clones of the
	// container's mounts that ask for ID mappings (see IDMappedMounts).
	IDMapDir string
	// TargetPid is the process whose PID namespace is joined when the
	// container's PID namespace mode is TARGET.
	TargetPid int
	// SandboxDir holds the files the CRI layer writes once per pod and that
	// every container bind-mounts: hostname, hosts, resolv.conf and shm/
	// (a tmpfs). "" leaves them out.
	SandboxDir string
	Host       Host
}

// invalid is the error every bad configuration produces: the CRI layer
// returns it as is.
func invalid(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, fmt.Sprintf(format, args...))
}

// Generate builds the OCI spec of an application container.
func Generate(ctx context.Context, in Input) (*specs.Spec, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Container == nil || in.Sandbox == nil {
		return nil, invalid("container and sandbox configs are required")
	}
	if err := checkID(in.ID); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(in.RootfsPath) {
		return nil, invalid("rootfs path %q is not absolute", in.RootfsPath)
	}
	lc := in.Container.GetLinux()
	sc := lc.GetSecurityContext()
	if sc.GetPrivileged() && !in.Sandbox.GetLinux().GetSecurityContext().GetPrivileged() {
		return nil, invalid("privileged container in a non-privileged sandbox")
	}
	s := baseSpec(in.RootfsPath)
	s.Annotations = containerAnnotations(in)
	steps := []func(*specs.Spec) error{
		func(s *specs.Spec) error { return setProcess(s, in.Container, in.Image, in.Sandbox.GetHostname()) },
		func(s *specs.Spec) error {
			return setUser(s, in.RootfsPath, userRequest{
				imageUser: imageUser(in.Image),
				uid:       sc.GetRunAsUser(),
				username:  sc.GetRunAsUsername(),
				gid:       sc.GetRunAsGroup(),
				groups:    sc.GetSupplementalGroups(),
				policy:    sc.GetSupplementalGroupsPolicy(),
			})
		},
		func(s *specs.Spec) error { return setUserNamespace(s, in) },
		func(s *specs.Spec) error { return setContainerNamespaces(s, in) },
		func(s *specs.Spec) error {
			if in.SysctlsSet {
				return nil
			}
			return setSysctls(s, in.Sandbox.GetLinux().GetSysctls(), in.Sandbox)
		},
		func(s *specs.Spec) error {
			return setSecurity(s, securityRequest{
				hostCaps:      in.Host.Capabilities,
				privileged:    sc.GetPrivileged(),
				caps:          sc.GetCapabilities(),
				noNewPrivs:    sc.GetNoNewPrivs(),
				readonlyRoot:  sc.GetReadonlyRootfs(),
				maskedPaths:   sc.GetMaskedPaths(),
				readonlyPaths: sc.GetReadonlyPaths(),
				seccomp:       sc.GetSeccomp(),
			})
		},
		func(s *specs.Spec) error {
			return setSandboxFiles(s, in.SandboxDir, ipcMode(in.Sandbox), in.Container.GetMounts())
		},
		func(s *specs.Spec) error {
			return setMounts(s, in.Container.GetMounts(), in.Host, UserNamespace(in.Sandbox), in.IDMapDir)
		},
		func(s *specs.Spec) error { return setDevices(s, in.Container.GetDevices(), sc.GetPrivileged()) },
		func(s *specs.Spec) error {
			cgroups, err := cgroupsPath(in.Sandbox, in.ID)
			if err != nil {
				return err
			}
			return setResources(s, lc.GetResources(), cgroups, in.Host)
		},
	}
	for _, step := range steps {
		if err := step(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ValidateSandbox checks what a pod's namespaces are given at creation (its
// hostname and sysctls), before any of them exists.
func ValidateSandbox(cfg *runtimeapi.PodSandboxConfig) error {
	if cfg == nil {
		return invalid("sandbox config is required")
	}
	if err := ValidateUserNamespace(cfg); err != nil {
		return err
	}
	if podNamespaces(cfg).GetNetwork() != runtimeapi.NamespaceMode_NODE {
		if err := checkHostname(cfg.GetHostname()); err != nil {
			return err
		}
	}
	if _, err := cgroupsPath(cfg, "sandbox"); err != nil {
		return err
	}
	return setSysctls(&specs.Spec{Linux: &specs.Linux{}}, cfg.GetLinux().GetSysctls(), cfg)
}

// checkID accepts the IDs the CRI layer makes (hex digests) and any other
// name that is safe as one path element.
func checkID(id string) error {
	if id == "" || len(id) > 128 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != "" || strings.Trim(id, ".") == "" {
		return invalid("invalid container ID %q", id)
	}
	return nil
}

func containerAnnotations(in Input) map[string]string {
	a := map[string]string{}
	for k, v := range in.Container.GetAnnotations() {
		a[k] = v
	}
	a[AnnotationContainerType] = ContainerTypeContainer
	a[AnnotationSandboxID] = in.SandboxID
	return a
}

func imageUser(img *v1.ConfigFile) string {
	if img == nil {
		return ""
	}
	return img.Config.User
}
