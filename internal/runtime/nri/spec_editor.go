package nri

import (
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// specEditor edits an OCI spec in place for NRI's adjustment applier
// (github.com/containerd/nri/pkg/runtime-tools/generate), which needs the
// setter interface of runtime-tools' generator. It is written here because
// the only runtime-tools release the module proxy serves (v0.9.0) does not
// build against the runtime-spec version berth uses.
type specEditor struct{ s *specs.Spec }

func newSpecEditor(s *specs.Spec) *specEditor {
	if s.Process == nil {
		s.Process = &specs.Process{}
	}
	if s.Linux == nil {
		s.Linux = &specs.Linux{}
	}
	return &specEditor{s: s}
}

func (e *specEditor) Spec() *specs.Spec { return e.s }

func (e *specEditor) resources() *specs.LinuxResources {
	if e.s.Linux.Resources == nil {
		e.s.Linux.Resources = &specs.LinuxResources{}
	}
	return e.s.Linux.Resources
}

func (e *specEditor) cpu() *specs.LinuxCPU {
	r := e.resources()
	if r.CPU == nil {
		r.CPU = &specs.LinuxCPU{}
	}
	return r.CPU
}

func (e *specEditor) memory() *specs.LinuxMemory {
	r := e.resources()
	if r.Memory == nil {
		r.Memory = &specs.LinuxMemory{}
	}
	return r.Memory
}

func (e *specEditor) hooks() *specs.Hooks {
	if e.s.Hooks == nil {
		e.s.Hooks = &specs.Hooks{}
	}
	return e.s.Hooks
}

func (e *specEditor) AddAnnotation(key, value string) {
	if e.s.Annotations == nil {
		e.s.Annotations = map[string]string{}
	}
	e.s.Annotations[key] = value
}

func (e *specEditor) RemoveAnnotation(key string) { delete(e.s.Annotations, key) }

func (e *specEditor) AddDevice(d specs.LinuxDevice) {
	for i, old := range e.s.Linux.Devices {
		if old.Path == d.Path {
			e.s.Linux.Devices[i] = d
			return
		}
	}
	e.s.Linux.Devices = append(e.s.Linux.Devices, d)
}

func (e *specEditor) RemoveDevice(path string) {
	out := e.s.Linux.Devices[:0]
	for _, d := range e.s.Linux.Devices {
		if d.Path != path {
			out = append(out, d)
		}
	}
	e.s.Linux.Devices = out
}

func (e *specEditor) AddOrReplaceLinuxNamespace(ns, path string) error {
	t := specs.LinuxNamespaceType(ns)
	for i, old := range e.s.Linux.Namespaces {
		if old.Type == t {
			e.s.Linux.Namespaces[i].Path = path
			return nil
		}
	}
	e.s.Linux.Namespaces = append(e.s.Linux.Namespaces, specs.LinuxNamespace{Type: t, Path: path})
	return nil
}

func (e *specEditor) RemoveLinuxNamespace(ns string) error {
	out := e.s.Linux.Namespaces[:0]
	for _, n := range e.s.Linux.Namespaces {
		if n.Type != specs.LinuxNamespaceType(ns) {
			out = append(out, n)
		}
	}
	e.s.Linux.Namespaces = out
	return nil
}

func (e *specEditor) AddPreStartHook(h specs.Hook) {
	//lint:ignore SA1019 NRI still adjusts the deprecated prestart hooks.
	e.hooks().Prestart = append(e.hooks().Prestart, h)
}
func (e *specEditor) AddPostStartHook(h specs.Hook) {
	e.hooks().Poststart = append(e.hooks().Poststart, h)
}
func (e *specEditor) AddPostStopHook(h specs.Hook) {
	e.hooks().Poststop = append(e.hooks().Poststop, h)
}

func (e *specEditor) AddProcessEnv(name, value string) {
	kv := name + "=" + value
	for i, old := range e.s.Process.Env {
		if strings.SplitN(old, "=", 2)[0] == name {
			e.s.Process.Env[i] = kv
			return
		}
	}
	e.s.Process.Env = append(e.s.Process.Env, kv)
}

func (e *specEditor) ClearProcessEnv()                            { e.s.Process.Env = nil }
func (e *specEditor) SetProcessArgs(args []string)                { e.s.Process.Args = args }
func (e *specEditor) SetProcessOOMScoreAdj(adj int)               { e.s.Process.OOMScoreAdj = &adj }
func (e *specEditor) SetLinuxCgroupsPath(p string)                { e.s.Linux.CgroupsPath = p }
func (e *specEditor) Mounts() []specs.Mount                       { return e.s.Mounts }
func (e *specEditor) ClearMounts()                                { e.s.Mounts = nil }
func (e *specEditor) AddMount(m specs.Mount)                      { e.s.Mounts = append(e.s.Mounts, m) }
func (e *specEditor) SetLinuxResourcesCPUCpus(c string)           { e.cpu().Cpus = c }
func (e *specEditor) SetLinuxResourcesCPUMems(m string)           { e.cpu().Mems = m }
func (e *specEditor) SetLinuxResourcesCPUPeriod(p uint64)         { e.cpu().Period = &p }
func (e *specEditor) SetLinuxResourcesCPUQuota(q int64)           { e.cpu().Quota = &q }
func (e *specEditor) SetLinuxResourcesCPURealtimePeriod(p uint64) { e.cpu().RealtimePeriod = &p }
func (e *specEditor) SetLinuxResourcesCPURealtimeRuntime(t int64) { e.cpu().RealtimeRuntime = &t }
func (e *specEditor) SetLinuxResourcesCPUShares(s uint64)         { e.cpu().Shares = &s }
func (e *specEditor) SetLinuxResourcesMemoryLimit(l int64)        { e.memory().Limit = &l }
func (e *specEditor) SetLinuxResourcesMemorySwap(s int64)         { e.memory().Swap = &s }

func (e *specEditor) RemoveMount(dest string) {
	out := e.s.Mounts[:0]
	for _, m := range e.s.Mounts {
		if m.Destination != dest {
			out = append(out, m)
		}
	}
	e.s.Mounts = out
}

func (e *specEditor) AddLinuxResourcesDevice(allow bool, devType string, major, minor *int64, access string) {
	r := e.resources()
	r.Devices = append(r.Devices, specs.LinuxDeviceCgroup{Allow: allow, Type: devType, Major: major, Minor: minor, Access: access})
}

func (e *specEditor) AddLinuxResourcesHugepageLimit(pageSize string, limit uint64) {
	r := e.resources()
	for i, l := range r.HugepageLimits {
		if l.Pagesize == pageSize {
			r.HugepageLimits[i].Limit = limit
			return
		}
	}
	r.HugepageLimits = append(r.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: pageSize, Limit: limit})
}

func (e *specEditor) AddLinuxResourcesUnified(key, val string) {
	r := e.resources()
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified[key] = val
}

func (e *specEditor) AddLinuxSysctl(key, value string) {
	if e.s.Linux.Sysctl == nil {
		e.s.Linux.Sysctl = map[string]string{}
	}
	e.s.Linux.Sysctl[key] = value
}

func (e *specEditor) RemoveLinuxSysctl(key string) { delete(e.s.Linux.Sysctl, key) }

func (e *specEditor) SetLinuxRootPropagation(rp string) error {
	switch rp {
	case "", "private", "rprivate", "slave", "rslave", "shared", "rshared", "unbindable", "runbindable":
		e.s.Linux.RootfsPropagation = rp
		return nil
	}
	return fmt.Errorf("invalid rootfs propagation %q", rp)
}
