package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type securityRequest struct {
	hostCaps      []string // nil: the runtime's own bounding set
	privileged    bool
	caps          *runtimeapi.Capability
	noNewPrivs    bool
	readonlyRoot  bool
	maskedPaths   []string
	readonlyPaths []string
	seccomp       *runtimeapi.SecurityProfile
}

// setSecurity applies capabilities, privileged mode, seccomp, no_new_privs,
// the read-only rootfs and masked/read-only paths. AppArmor and SELinux are
// left out: this runtime targets hosts without them (the kernel here has no
// AppArmor), and labels it cannot apply are ignored as containerd does.
func setSecurity(s *specs.Spec, req securityRequest) error {
	s.Root.Readonly = req.readonlyRoot
	s.Process.NoNewPrivileges = req.noNewPrivs
	all := req.hostCaps
	if all == nil {
		var err error
		if all, err = ownCapabilities(); err != nil {
			return invalid("read the runtime's capabilities: %v", err)
		}
	}
	if req.privileged {
		setPrivileged(s, all)
		return nil
	}
	caps, err := capabilities(req.caps, all)
	if err != nil {
		return err
	}
	s.Process.Capabilities = caps
	setProcMasks(s, req.maskedPaths, req.readonlyPaths)
	for _, p := range append(slices.Clone(s.Linux.MaskedPaths), s.Linux.ReadonlyPaths...) {
		if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
			return invalid("masked or read-only path %q is not absolute", p)
		}
	}
	return setSeccomp(s, req.seccomp)
}

// setProcMasks applies the CRI's masked and read-only paths. The kubelet
// always sends the full lists (its defaults for procMount Default), each of
// which replaces the runtime's default list; both empty is how it asks for procMount Unmasked, which the API allows only
// with hostUsers: false. Since gRPC cannot tell empty from unset, empty
// lists lift the masks only for a container in its pod's user namespace
// (runc's spec then has one); any other container keeps the runtime's
// defaults, which is stricter than containerd (no masks for a bare CRI
// client that sends none).
func setProcMasks(s *specs.Spec, masked, readonly []string) {
	if len(masked) == 0 && len(readonly) == 0 {
		if inUserNamespace(s) {
			s.Linux.MaskedPaths, s.Linux.ReadonlyPaths = []string{}, []string{}
		}
		return
	}
	if len(masked) > 0 {
		s.Linux.MaskedPaths = cleanPaths(masked)
	}
	if len(readonly) > 0 {
		s.Linux.ReadonlyPaths = cleanPaths(readonly)
	}
}

func inUserNamespace(s *specs.Spec) bool {
	return slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace })
}

func cleanPaths(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, filepath.Clean(p))
	}
	return out
}

// setPrivileged gives the container every capability and device and lifts
// the masks, as Kubernetes defines privileged.
func setPrivileged(s *specs.Spec, all []string) {
	all = slices.Clone(all)
	s.Process.Capabilities = &specs.LinuxCapabilities{
		Bounding: all, Effective: all, Permitted: all,
	}
	s.Linux.MaskedPaths = nil
	s.Linux.ReadonlyPaths = nil
	s.Linux.Seccomp = nil
	for i, m := range s.Mounts {
		if m.Destination == "/sys" || m.Destination == "/sys/fs/cgroup" {
			s.Mounts[i].Options = slices.DeleteFunc(slices.Clone(m.Options), func(o string) bool { return o == "ro" })
		}
	}
}

func capabilities(req *runtimeapi.Capability, all []string) (*specs.LinuxCapabilities, error) {
	set := slices.Clone(defaultCapabilities)
	add, err := capNames(req.GetAddCapabilities())
	if err != nil {
		return nil, err
	}
	drop, err := capNames(req.GetDropCapabilities())
	if err != nil {
		return nil, err
	}
	ambient, err := capNames(req.GetAddAmbientCapabilities())
	if err != nil {
		return nil, err
	}
	// Order as containerd: ALL in add wins over drops of single caps, then
	// drop ALL empties the set before the explicit adds.
	if slices.Contains(add, "ALL") {
		set = slices.Clone(all)
	}
	if slices.Contains(drop, "ALL") {
		set = nil
	}
	for _, c := range add {
		if c != "ALL" && !slices.Contains(set, c) {
			set = append(set, c)
		}
	}
	set = slices.DeleteFunc(set, func(c string) bool {
		return slices.Contains(drop, c) && !slices.Contains(add, c)
	})
	if set == nil {
		set = []string{}
	}
	caps := &specs.LinuxCapabilities{Bounding: set, Effective: set, Permitted: set}
	ambient = slices.DeleteFunc(ambient, func(c string) bool { return c == "ALL" })
	if len(ambient) > 0 {
		for _, c := range ambient {
			if !slices.Contains(set, c) {
				return nil, invalid("ambient capability %s is not in the container's capability set", c)
			}
		}
		caps.Ambient = ambient
		caps.Inheritable = ambient
	}
	return caps, nil
}

// capNames normalises names to CAP_X form and rejects unknown ones.
func capNames(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, c := range in {
		c = strings.ToUpper(c)
		if c == "ALL" {
			out = append(out, c)
			continue
		}
		if !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		if !slices.Contains(allCapabilities, c) {
			return nil, invalid("unknown capability %q", c)
		}
		out = append(out, c)
	}
	return out, nil
}

// setSeccomp applies the pod's seccomp choice. RuntimeDefault is moby's
// default profile (github.com/moby/profiles/seccomp, the profile containerd
// and Docker ship), filtered by the container's capabilities. An unset
// profile is Unconfined, as the CRI defines.
func setSeccomp(s *specs.Spec, p *runtimeapi.SecurityProfile) error {
	if p == nil {
		return nil
	}
	switch p.GetProfileType() {
	case runtimeapi.SecurityProfile_Unconfined:
		return nil
	case runtimeapi.SecurityProfile_RuntimeDefault:
		prof, err := seccomp.GetDefaultProfile(s)
		if err != nil {
			return invalid("default seccomp profile: %v", err)
		}
		s.Linux.Seccomp = prof
		return nil
	case runtimeapi.SecurityProfile_Localhost:
		ref := p.GetLocalhostRef()
		if !filepath.IsAbs(ref) {
			return invalid("seccomp localhost profile %q is not an absolute path", ref)
		}
		body, err := os.ReadFile(ref)
		if err != nil {
			return invalid("seccomp localhost profile: %v", err)
		}
		prof, err := seccomp.LoadProfile(string(body), s)
		if err != nil {
			return invalid("seccomp localhost profile %s: %v", ref, err)
		}
		s.Linux.Seccomp = prof
		return nil
	default:
		return invalid("unknown seccomp profile type %v", p.GetProfileType())
	}
}

// ownCapabilities is this process's bounding set by name: the most any
// container it starts can hold.
func ownCapabilities() ([]string, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		hex, ok := strings.CutPrefix(line, "CapBnd:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return nil, err
		}
		return capabilitiesInMask(mask), nil
	}
	return nil, errors.New("no CapBnd in /proc/self/status")
}

// capabilitiesInMask names the capabilities whose bits are set.
func capabilitiesInMask(mask uint64) []string {
	var out []string
	for bit, name := range allCapabilities {
		if mask&(1<<bit) != 0 {
			out = append(out, name)
		}
	}
	return out
}
