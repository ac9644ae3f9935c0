package main

import (
	"fmt"
	"strings"
	"time"
)

// runInfo is what the report says about how the figures were produced.
type runInfo struct {
	command             string
	date                time.Time
	loadBefore, loadEnd string // /proc/loadavg's 1-minute figure
	note                string
}

// comparison is one shape's results: berth always, the peer when it ran.
type comparison struct {
	shape       shape
	berth, peer *result
}

const peerColumn = "kube-apiserver " + peerVersion + " + etcd"

// renderReport renders the api section of docs/benchmarks.md.
func renderReport(info runInfo, comps []comparison) string {
	var b strings.Builder
	b.WriteString("## API server: berth vs kube-apiserver (bench/api)\n\n")
	fmt.Fprintf(&b, "`%s`, measured %s on this machine: 2 cores shared by the server under test, the load\n", info.command, info.date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "generator and other engineers' builds and tests (1-minute load average %s at the start, %s at the end).\n", info.loadBefore, info.loadEnd)
	b.WriteString("The servers ran one after the other in the same run, each on a fresh data directory.\n")
	if info.note != "" {
		b.WriteString(info.note + "\n")
	}
	for _, c := range comps {
		fmt.Fprintf(&b, "\n### %d nodes, %d pods, %d clients\n\n", c.shape.nodes, c.shape.pods, c.shape.clients)
		b.WriteString("| figure | berth | " + peerColumn + " | target | met |\n| --- | --- | --- | --- | --- |\n")
		for _, r := range compare(c.berth, c.peer) {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.figure, r.berth, r.peer, r.target, r.met)
		}
	}
	b.WriteString(`
How it is measured: M Node objects (capacity and allocatable in status) with a Lease each,
renewed every 10 s as agents do; M pod informers, each a list+watch with fieldSelector
spec.nodeName=NODE on its own connection; N pods created already bound by C clients (one
connection each, protobuf, no client-side rate limit); watch delivery is from the create call's
start to the ADDED event at that pod's node watcher; then full LISTs of all pods, one status
patch per pod (as the kubelet sends), and deletion with grace period 0. RSS is VmRSS of
berth server (embedded etcd in-process) and of kube-apiserver and etcd summed, read when
started, when loaded (after creates and LISTs) and at the end (after deletes); peak is VmHWM.
kube-apiserver runs with --authorization-mode Node,RBAC and default admission, and reaches
etcd over plain HTTP on loopback (no TLS), which favours it.
`)
	return b.String()
}

// row is one line of a comparison table.
type row struct{ figure, berth, peer, target, met string }

// compare lays out the figures of berth and (when not nil) the peer,
// marking the targets met or unmet.
func compare(b, p *result) []row {
	peer := func(f func(*result) string) string {
		if p == nil {
			return "not run"
		}
		return f(p)
	}
	judge := func(met func() bool) string {
		switch {
		case p == nil:
			return "not measured"
		case met():
			return "met"
		default:
			return "**unmet**"
		}
	}
	rate := func(f func(*result) float64) func(*result) string {
		return func(r *result) string { return fmt.Sprintf("%.0f/s", f(r)) }
	}
	mem := func(f func(*result) []memory, peak bool) func(*result) string {
		return func(r *result) string { return formatMemory(f(r), peak) }
	}
	createRate := func(r *result) float64 { return r.createPerSec }
	p99 := func(r *result) time.Duration { return percentile(r.watch, 99) }
	loaded := func(r *result) []memory { return r.memLoaded }
	end := func(r *result) []memory { return r.memEnd }
	return []row{
		{"pod creates", rate(createRate)(b), peer(rate(createRate)), "≥ 2× peer",
			judge(func() bool { return b.createPerSec >= 2*p.createPerSec })},
		{"watch delivery p50", formatDuration(percentile(b.watch, 50)), peer(func(r *result) string { return formatDuration(percentile(r.watch, 50)) }), "", ""},
		{"watch delivery p99", formatDuration(p99(b)), peer(func(r *result) string { return formatDuration(p99(r)) }), "≤ ½ peer",
			judge(func() bool { return p99(b) <= p99(p)/2 })},
		{"ADDED events missed / sent to the wrong node", fmt.Sprintf("%d / %d", b.missedAdds, b.misdelivered),
			peer(func(r *result) string { return fmt.Sprintf("%d / %d", r.missedAdds, r.misdelivered) }), "0 / 0",
			judge(func() bool { return b.missedAdds == 0 && b.misdelivered == 0 })},
		{fmt.Sprintf("full LIST of all pods (median of %d)", listRepeats), formatDuration(b.list), peer(func(r *result) string { return formatDuration(r.list) }), "", ""},
		{"pod status patches", rate(func(r *result) float64 { return r.statusPerSec })(b), peer(rate(func(r *result) float64 { return r.statusPerSec })), "", ""},
		{"pod deletes", rate(func(r *result) float64 { return r.deletePerSec })(b), peer(rate(func(r *result) float64 { return r.deletePerSec })), "", ""},
		{"RSS, started", formatMemory(b.memStarted, false), peer(mem(func(r *result) []memory { return r.memStarted }, false)), "", ""},
		{"RSS, loaded", formatMemory(b.memLoaded, false), peer(mem(loaded, false)), "≤ ½ peer",
			judge(func() bool { return rssTotal(b.memLoaded, false) <= rssTotal(p.memLoaded, false)/2 })},
		{"RSS, end", formatMemory(b.memEnd, false), peer(mem(end, false)), "≤ ½ peer",
			judge(func() bool { return rssTotal(b.memEnd, false) <= rssTotal(p.memEnd, false)/2 })},
		{"peak RSS", formatMemory(b.memEnd, true), peer(mem(end, true)), "", ""},
	}
}

func rssTotal(ms []memory, peak bool) uint64 {
	var sum uint64
	for _, m := range ms {
		if peak {
			sum += m.peak
		} else {
			sum += m.rss
		}
	}
	return sum
}

// formatMemory shows one process as "N MiB" and several as
// "name N + name M = T MiB".
func formatMemory(ms []memory, peak bool) string {
	mib := func(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	if len(ms) == 1 {
		return mib(rssTotal(ms, peak))
	}
	var parts []string
	for _, m := range ms {
		parts = append(parts, m.name+" "+mib(rssTotal([]memory{m}, peak)))
	}
	return strings.Join(parts, " + ") + " = " + mib(rssTotal(ms, peak))
}

// formatDuration shows milliseconds with one decimal below 100 ms.
func formatDuration(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 100 {
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
