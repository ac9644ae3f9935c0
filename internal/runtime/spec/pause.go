package spec

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/nspin"
	"github.com/berth/berth/internal/runtime/pause"
)

// PauseInput is everything GeneratePause needs for a pod's pause process.
type PauseInput struct {
	ID     string // the sandbox's
	Config *runtimeapi.PodSandboxConfig
	Image  *v1.ConfigFile
	// RootfsPath is the pause image's mounted (read-only) root filesystem.
	RootfsPath string
	// Namespaces are the pod's pinned namespaces; a type absent is the host's.
	Namespaces map[nspin.Type]string
	Host       Host
}

// Who the pause process runs as when the pod and image would make it root:
// the user the upstream pause image names.
const pauseUser = 65535

// pauseOOMScoreAdj keeps the pause process, without which the pod's PID
// namespace dies, from being the OOM killer's choice before its
// containers, as the kubelet and containerd do.
const pauseOOMScoreAdj = -998

// GeneratePause describes a pod's pause process (see package pause): the
// pause image's command, run as the pod's or image's user but never root,
// in the sandbox's cgroup.
func GeneratePause(ctx context.Context, in PauseInput) (*pause.Process, error) {
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
	s := baseSpec(in.RootfsPath)
	if err := setProcess(s, &runtimeapi.ContainerConfig{}, in.Image, in.Config.GetHostname()); err != nil {
		return nil, err
	}
	sc := in.Config.GetLinux().GetSecurityContext()
	if err := setUser(s, in.RootfsPath, userRequest{imageUser: imageUser(in.Image), uid: sc.GetRunAsUser(), gid: sc.GetRunAsGroup()}); err != nil {
		return nil, err
	}
	args := append([]string{}, s.Process.Args...)
	args[0] = lookPathIn(in.RootfsPath, args[0], s.Process.Env)
	uid, gid := s.Process.User.UID, s.Process.User.GID
	if uid == 0 {
		uid, gid = pauseUser, pauseUser
	}
	cgroups, err := cgroupsPath(in.Config, in.ID)
	if err != nil {
		return nil, err
	}
	p := &pause.Process{
		Args: args, Env: s.Process.Env, Root: in.RootfsPath, UID: uid, GID: gid,
		Namespaces:  in.Namespaces,
		CgroupsPath: cgroups,
		OOMScoreAdj: min(max(pauseOOMScoreAdj, in.Host.OOMScoreAdjMin), 1000),
	}
	if u := UserNamespace(in.Config); u != nil {
		// The pause process creates the pod's namespaces (see package pause).
		p.Namespaces = nil
		p.UIDMappings, p.GIDMappings = pauseIDMaps(u.GetUids()), pauseIDMaps(u.GetGids())
	}
	if err := p.Validate(); err != nil {
		return nil, invalid("pause image: %v", err)
	}
	return p, nil
}

// lookPathIn resolves a command name without a slash the way the pause
// process's PATH would inside rootfs, as runc does for a container;
// anything else is returned as is. Only existence is checked, with Lstat,
// so a symbolic link is never followed on the host side.
func lookPathIn(rootfs, name string, env []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, kv := range env {
		dirs, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, dir := range filepath.SplitList(dirs) {
			if !path.IsAbs(dir) {
				continue
			}
			p := path.Join(dir, name)
			if _, err := os.Lstat(filepath.Join(rootfs, p)); err == nil {
				return p
			}
		}
	}
	return name
}
