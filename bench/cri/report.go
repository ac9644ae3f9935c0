package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/berth/berth/bench/internal/report"
)

// renderReport formats the side-by-side table: each figure is the median
// over rounds of that round's figure (a latency's median or p90 over its
// samples; a memory reading).
func renderReport(o options, results map[string][]round, pullBytes int64, loadBefore, loadAfter string, now time.Time) string {
	b, c := results["berth"], results["containerd"]
	var w strings.Builder
	fmt.Fprintf(&w, "## CRI runtime: berth runtime beside containerd 1.6\n\n")
	fmt.Fprintf(&w, "`go run ./bench/cri -rounds %d -pods %d -pulls %d -running-pods %d` (as root), %s; "+
		"1-minute load average %s at the start, %s at the end (2 cores, shared with other work). "+
		"%s vs %s, same runc, CNI plugins (bridge, host-local, portmap) and images (hack/testregistry --critest on loopback). "+
		"Latencies from `critest -benchmark` (cri-tools v1.37.0), samples one at a time: median / p90 over %d samples, "+
		"each the median over %d round(s). Memory from /proc/PID/status: VmRSS (RssAnon in brackets), median over rounds.\n\n",
		o.rounds, o.pods, o.pulls, o.runningPod, now.Format("2006-01-02 15:04 UTC"), loadBefore, loadAfter,
		b[0].version, c[0].version, o.pods, len(b))
	if len(b) < o.rounds {
		fmt.Fprintf(&w, "**Partial: %d of %d rounds done.**\n\n", len(b), o.rounds)
	}

	fmt.Fprintf(&w, "| | berth runtime | containerd | berth / containerd | target |\n|---|---|---|---|---|\n")
	latencyRow := func(label, op, target string, limit float64) {
		bm, cm := latency(b, op, 0.5), latency(c, op, 0.5)
		fmt.Fprintf(&w, "| %s | %s / %s | %s / %s | %.2f | %s |\n", label,
			ms(bm), ms(latency(b, op, 0.9)), ms(cm), ms(latency(c, op, 0.9)),
			ratio(int64(bm), int64(cm)), verdict(target, limit, ratio(int64(bm), int64(cm))))
	}
	latencyRow("RunPodSandbox", "CreatePod", "≤ 0.5", 0.5)
	latencyRow("CreateContainer", "CreateContainer", "", 0)
	latencyRow("StartContainer", "StartContainer", "", 0)
	latencyRow("CreateContainer + StartContainer", createStart, "≤ 0.5", 0.5)
	floorRow := func(label, op string) {
		fmt.Fprintf(&w, "| … %s | %s / %s | | %.2f | |\n", label,
			ms(latency(b, op, 0.5)), ms(latency(b, op, 0.9)), ratio(int64(latency(b, op, 0.5)), int64(latency(c, createStart, 0.5))))
	}
	floorRow("`runc run --detach` alone on berth's bundles, from runc's file (as containerd runs it)", runcRun)
	floorRow("the same from a sealed copy of runc, with GOMAXPROCS=1 (as berth runs it)", runcRunSealed)
	latencyRow("StopPodSandbox", "StopPod", "", 0)
	latencyRow("RemovePodSandbox", "RemovePod", "", 0)
	latencyRow(fmt.Sprintf("PullImage (%.1f MB, loopback)", float64(pullBytes)/1e6), "PullImage", "", 0)

	memoryRow := func(label, target string, limit float64, pick func(round) memory) {
		bm, cm := medianMemory(b, pick), medianMemory(c, pick)
		fmt.Fprintf(&w, "| %s | %s | %s | %.2f | %s |\n", label, mib(bm), mib(cm),
			ratio(bm.rss, cm.rss), verdict(target, limit, ratio(bm.rss, cm.rss)))
	}
	memoryRow("daemon RSS, idle", "≤ 0.5", 0.5, func(r round) memory { return r.idle })
	memoryRow("daemon RSS, after the critest runs", "", 0, func(r round) memory { return r.afterBench })
	memoryRow(fmt.Sprintf("daemon RSS, %d pods running", o.runningPod), "≤ 0.5", 0.5, func(r round) memory { return r.loaded.daemon })
	perPod := func(r round) memory { return divide(r.loaded.helpers, r.loaded.pods) }
	memoryRow("monitor (berth-monitor) vs containerd-shim-runc-v2, per pod", "≤ 1", 1, perPod)
	perProcess := func(r round) memory { return divide(r.loaded.helpers, r.loaded.count) }
	memoryRow("… per process", "", 0, perProcess)
	fmt.Fprintf(&w, "\nHelper processes with %d pods: berth-monitor %d (one per container and one per pause process, and the one the runtime keeps started ahead), "+
		"containerd-shim-runc-v2 %d (one per pod). A helper's VmRSS counts the pages of its executable that are shared "+
		"with every other instance; RssAnon is what each one adds on its own.\n",
		o.runningPod, b[0].loaded.count, c[0].loaded.count)
	fmt.Fprintf(&w, "\nThe `runc run --detach` rows time the OCI runtime alone, %d times each way, each on the bundle and fresh root "+
		"filesystem berth runtime has just made for a new container like critest's benchmark one (its image and command, "+
		"in a pod like critest's): the part of CreateContainer + StartContainer that is runc's own. Run from its file, "+
		"`runc init` bind-mounts its own binary read-only, unmounts it and executes itself again (its CVE-2019-5736 guard); "+
		"run from a sealed in-memory copy, it skips that. berth's monitors run runc with GOMAXPROCS=1, their own setting. "+
		"Their ratios are to containerd's CreateContainer + StartContainer.\n", o.pods)
	return w.String()
}

// latency is op's q-quantile in each round, then the median over rounds.
func latency(rs []round, op string, q float64) time.Duration {
	per := make([]time.Duration, len(rs))
	for i, r := range rs {
		per[i] = report.Quantile(r.samples[op], q)
	}
	return report.Median(per)
}

func medianMemory(rs []round, pick func(round) memory) memory {
	rss, anon := make([]int64, len(rs)), make([]int64, len(rs))
	for i, r := range rs {
		m := pick(r)
		rss[i], anon[i] = m.rss, m.anon
	}
	return memory{report.Median(rss), report.Median(anon)}
}

func divide(m memory, n int) memory {
	if n == 0 {
		return memory{}
	}
	return memory{m.rss / int64(n), m.anon / int64(n)}
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// verdict marks a target met or unmet; an empty target has none.
func verdict(target string, limit, got float64) string {
	switch {
	case target == "":
		return ""
	case got > 0 && got <= limit:
		return target + ": **met**"
	default:
		return target + ": **unmet**"
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(m memory) string {
	return fmt.Sprintf("%.1f MiB (%.1f)", float64(m.rss)/1024, float64(m.anon)/1024)
}
