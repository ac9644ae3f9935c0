// Package spec translates a CRI container or sandbox configuration, together
// with its image's configuration, into the OCI runtime spec that the OCI
// runtime (runc) executes. Everything here is a function of its input plus a
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

// Annotations the spec carries so that tools reading config.json (and berth's
// own recovery) can tell sandboxes from containers, as containerd and CRI-O do.
const (
	AnnotationContainerType = "io.kubernetes.cri.container-type"
	AnnotationSandboxID     = "io.kubernetes.cri.sandbox-id"
	ContainerTypeSandbox    = "sandbox"
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
	// through /proc/PID/ns/... . 0 means the pod has no pause container: its
	// UTS and IPC namespaces are the pinned files below, and the pod's
	// sysctls go into every container's spec, since no pause process
	// applies them for all.
	SandboxPid int
	// UTSNSPath and IPCNSPath are the pod's pinned UTS and IPC namespaces
	// when it has no pause container ("" otherwise, or for the host's).
	UTSNSPath string
	IPCNSPath string
	// NetNSPath is the pod's network namespace (made for CNI); "" means use
	// the sandbox process's one (or the host's for host networking).
	NetNSPath string
	// TargetPid is the process whose PID namespace is joined when the
	// container's PID namespace mode is TARGET.
	TargetPid int
	// SandboxDir holds the files the CRI layer writes once per pod and that
	// every container bind-mounts: hostname, hosts, resolv.conf and shm/
	// (a tmpfs). "" leaves them out.
	SandboxDir string
	Host       Host
}

// SandboxInput is everything GenerateSandbox needs for a pod's pause container.
type SandboxInput struct {
	ID         string
	Config     *runtimeapi.PodSandboxConfig
	Image      *v1.ConfigFile
	RootfsPath string
	// NetNSPath is the pod's network namespace; "" with a non-host network
	// gives the sandbox a fresh (unconfigured) one.
	NetNSPath  string
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
		func(s *specs.Spec) error { return setContainerNamespaces(s, in) },
		func(s *specs.Spec) error {
			if in.SandboxPid > 0 {
				return nil // the pause container set them in the shared namespaces
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
		func(s *specs.Spec) error { return setMounts(s, in.Container.GetMounts(), in.Host) },
		func(s *specs.Spec) error { return setDevices(s, in.Container.GetDevices(), sc.GetPrivileged()) },
		func(s *specs.Spec) error {
			return setResources(s, lc.GetResources(), cgroupsPath(in.Sandbox, in.ID), in.Host.OOMScoreAdjMin)
		},
	}
	for _, step := range steps {
		if err := step(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// GenerateSandbox builds the OCI spec of a pod's pause container, which
// owns the pod's namespaces.
func GenerateSandbox(ctx context.Context, in SandboxInput) (*specs.Spec, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Config == nil {
		return nil, invalid("sandbox config is required")
	}
	if err := checkID(in.ID); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(in.RootfsPath) {
		return nil, invalid("rootfs path %q is not absolute", in.RootfsPath)
	}
	lc := in.Config.GetLinux()
	sc := lc.GetSecurityContext()
	s := baseSpec(in.RootfsPath)
	s.Annotations = map[string]string{
		AnnotationContainerType: ContainerTypeSandbox,
		AnnotationSandboxID:     in.ID,
	}
	for k, v := range in.Config.GetAnnotations() {
		s.Annotations[k] = v
	}
	steps := []func(*specs.Spec) error{
		func(s *specs.Spec) error {
			return setProcess(s, &runtimeapi.ContainerConfig{}, in.Image, in.Config.GetHostname())
		},
		func(s *specs.Spec) error {
			return setUser(s, in.RootfsPath, userRequest{
				imageUser: imageUser(in.Image),
				uid:       sc.GetRunAsUser(),
				gid:       sc.GetRunAsGroup(),
				groups:    sc.GetSupplementalGroups(),
				policy:    sc.GetSupplementalGroupsPolicy(),
			})
		},
		func(s *specs.Spec) error { return setSandboxNamespaces(s, in) },
		func(s *specs.Spec) error {
			// The pause process needs no privilege at all, whatever the pod asks for
			// its containers; only the seccomp choice is honoured.
			return setSecurity(s, securityRequest{
				hostCaps:     in.Host.Capabilities,
				noNewPrivs:   true,
				readonlyRoot: sc.GetReadonlyRootfs(),
				seccomp:      sc.GetSeccomp(),
				noCaps:       true,
			})
		},
		func(s *specs.Spec) error { return setSysctls(s, lc.GetSysctls(), in.Config) },
		func(s *specs.Spec) error { return setSandboxFiles(s, in.SandboxDir, ipcMode(in.Config), nil) },
		func(s *specs.Spec) error {
			return setResources(s, nil, cgroupsPath(in.Config, in.ID), in.Host.OOMScoreAdjMin)
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
// hostname and sysctls), for a pod that has no pause container whose spec
// generation would check them.
func ValidateSandbox(cfg *runtimeapi.PodSandboxConfig) error {
	if cfg == nil {
		return invalid("sandbox config is required")
	}
	if podNamespaces(cfg).GetNetwork() != runtimeapi.NamespaceMode_NODE {
		if err := checkHostname(cfg.GetHostname()); err != nil {
			return err
		}
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
