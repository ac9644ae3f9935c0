package spec

import (
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// setResources sets the cgroup path and the CPU, memory, hugepage and OOM
// score settings. A field left 0 by the CRI means "not limited".
func setResources(s *specs.Spec, r *runtimeapi.LinuxContainerResources, cgroupsPath string, host Host) error {
	s.Linux.CgroupsPath = cgroupsPath
	oom := max(int(r.GetOomScoreAdj()), host.OOMScoreAdjMin)
	if r.GetOomScoreAdj() < -1000 || r.GetOomScoreAdj() > 1000 {
		return invalid("oom_score_adj %d is outside [-1000, 1000]", r.GetOomScoreAdj())
	}
	oom = min(oom, 1000)
	s.Process.OOMScoreAdj = &oom
	lr, err := LinuxResources(r)
	if err != nil {
		return err
	}
	lr.Devices = s.Linux.Resources.Devices
	if !host.Hugetlb {
		lr.HugepageLimits = nil
	}
	s.Linux.Resources = lr
	return nil
}

// LinuxResources converts CRI resources to OCI ones; the OCI runtime layer
// uses it for UpdateContainerResources too.
func LinuxResources(r *runtimeapi.LinuxContainerResources) (*specs.LinuxResources, error) {
	out := &specs.LinuxResources{}
	if r == nil {
		return out, nil
	}
	if r.GetCpuShares() < 0 || r.GetCpuPeriod() < 0 || r.GetMemoryLimitInBytes() < 0 || r.GetMemorySwapLimitInBytes() < 0 {
		return nil, invalid("negative resource limit")
	}
	if r.GetCpuQuota() < -1 {
		return nil, invalid("cpu quota %d is invalid", r.GetCpuQuota())
	}
	cpu := &specs.LinuxCPU{}
	if v := uint64(r.GetCpuShares()); v != 0 {
		cpu.Shares = &v
	}
	if v := r.GetCpuQuota(); v != 0 {
		cpu.Quota = &v
	}
	if v := uint64(r.GetCpuPeriod()); v != 0 {
		cpu.Period = &v
	}
	cpu.Cpus = r.GetCpusetCpus()
	cpu.Mems = r.GetCpusetMems()
	for _, set := range []string{cpu.Cpus, cpu.Mems} {
		if strings.Trim(set, "0123456789,-") != "" {
			return nil, invalid("invalid cpuset %q", set)
		}
	}
	if *cpu != (specs.LinuxCPU{}) {
		out.CPU = cpu
	}
	if v := r.GetMemoryLimitInBytes(); v != 0 {
		out.Memory = &specs.LinuxMemory{Limit: &v}
		if sw := r.GetMemorySwapLimitInBytes(); sw != 0 {
			if sw < v {
				return nil, invalid("memory+swap limit %d is below the memory limit %d", sw, v)
			}
			out.Memory.Swap = &sw
		}
	}
	for _, h := range r.GetHugepageLimits() {
		if h.GetPageSize() == "" || strings.ContainsAny(h.GetPageSize(), "/\x00.") {
			return nil, invalid("invalid hugepage size %q", h.GetPageSize())
		}
		out.HugepageLimits = append(out.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}
	if len(r.GetUnified()) > 0 {
		out.Unified = map[string]string{}
		for k, v := range r.GetUnified() {
			if k == "" || strings.ContainsAny(k, "/\x00") {
				return nil, invalid("invalid unified cgroup key %q", k)
			}
			out.Unified[k] = v
		}
	}
	return out, nil
}
