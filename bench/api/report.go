package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// runInfo is what the report says about how the figures were produced.
type runInfo struct {
	command             string
	date                time.Time
	loadBefore, loadEnd string // /proc/loadavg's 1-minute figure
	note                string
	runs                int
	berth               string // which berth ran
}

// comparison is one shape's results: berth always, the peer when it ran.
type comparison struct {
	shape       shape
	berth, peer *result
}

const peerColumn = "kube-apiserver " + peerVersion + " + etcd + kube-controller-manager + kube-scheduler"

// renderReport renders the api section of docs/benchmarks.md.
func renderReport(info runInfo, comps []comparison) string {
	var b strings.Builder
	b.WriteString("## API server: berth vs kube-apiserver (bench/api)\n\n")
	fmt.Fprintf(&b, "`%s`, measured %s on this machine: %d cores for the server under test and the\n", info.command, info.date.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU())
	fmt.Fprintf(&b, "load generator (1-minute load average %s at the start, %s at the end).\n", info.loadBefore, info.loadEnd)
	fmt.Fprintf(&b, "berth: %s. ", info.berth)
	b.WriteString("The servers ran one after the other in the same run, each on a fresh data directory")
	if info.runs > 1 {
		fmt.Fprintf(&b, "; each figure is the median of %d runs per server, alternating servers", info.runs)
	}
	b.WriteString(".\n")
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
	fmt.Fprintf(&b, `
How it is measured: M Node objects (capacity and allocatable in status) with a Lease each,
renewed every 10 s as agents do; M pod informers, each a list+watch with fieldSelector
spec.nodeName=NODE on its own connection; N pods created already bound by C clients (one
connection each, protobuf, no client-side rate limit); watch delivery is from the create call's
start to the ADDED event at that pod's node watcher; server CPU per create is the user and system
time of the server's processes (for the peer, all four) over the create phase,
divided by the pods created, and the load generator's the same for this process (its clients,
node watchers and lease renewals), which runs on the same cores; then full LISTs of all pods, one status
patch per pod (as the kubelet sends), deletion with grace period 0, and last %d pods created
again at a fixed %d/s, each call started on the clock (an open loop), for watch delivery at a
load both servers sustain: the create phase's clients each wait for their previous call, so its
latencies are about clients / throughput (Little's law). RSS is VmRSS of
berth server (embedded etcd, controllers and scheduler in-process) and of the peer's four
processes summed, read when
started, when loaded (after creates and LISTs) and at the end (after deletes); peak is VmHWM.
kube-apiserver runs with --authorization-mode Node,RBAC and default admission, and reaches
etcd over plain HTTP on loopback (no TLS), which favours it; kube-controller-manager runs every
default controller with its service account's credentials and kube-scheduler its defaults, as
berth server runs them, both leading before the load starts.
`, pacedPods, pacedRate)
	return b.String()
}

// row is one line of a comparison table.
type row struct{ figure, berth, peer, target, met string }

// figure is one measured quantity, and berth's target for it if any.
type figure struct {
	name   string
	show   func(*result) string
	target string
	met    func(berth, peer *result) bool // nil: no target
}

func rate(f func(*result) float64) func(*result) string {
	return func(r *result) string { return fmt.Sprintf("%.0f/s", f(r)) }
}

func duration(f func(*result) time.Duration) func(*result) string {
	return func(r *result) string { return formatDuration(f(r)) }
}

func microseconds(f func(*result) time.Duration) func(*result) string {
	return func(r *result) string { return fmt.Sprintf("%.0f µs", float64(f(r))/float64(time.Microsecond)) }
}

func rss(f func(*result) []memory, peak bool) func(*result) string {
	return func(r *result) string { return formatMemory(f(r), peak) }
}

var figures = []figure{
	// Creates are judged by the server's CPU per create, not by the rate:
	// the load generator shares the cores, so the rates' ratio stays under
	// the servers' efficiency ratio (docs/adr/0012).
	{name: "pod creates", show: rate(func(r *result) float64 { return r.createPerSec })},
	{name: "server CPU per pod create", show: microseconds(func(r *result) time.Duration { return r.cpuPerCreate }), target: "≤ ½ peer",
		met: func(b, p *result) bool { return b.cpuPerCreate <= p.cpuPerCreate/2 }},
	{name: "load generator CPU per pod create", show: microseconds(func(r *result) time.Duration { return r.loadCPUPerCreate })},
	{name: "watch delivery p50", show: duration(func(r *result) time.Duration { return r.watchP50 })},
	{name: "watch delivery p99", show: duration(func(r *result) time.Duration { return r.watchP99 }), target: "≤ ½ peer",
		met: func(b, p *result) bool { return b.watchP99 <= p.watchP99/2 }},
	{name: fmt.Sprintf("watch delivery p50 at %d creates/s", pacedRate), show: duration(func(r *result) time.Duration { return r.pacedP50 })},
	{name: fmt.Sprintf("watch delivery p99 at %d creates/s", pacedRate), show: duration(func(r *result) time.Duration { return r.pacedP99 })},
	{name: "ADDED events missed / sent to the wrong node", show: func(r *result) string { return fmt.Sprintf("%d / %d", r.missedAdds, r.misdelivered) },
		target: "0 / 0", met: func(b, _ *result) bool { return b.missedAdds == 0 && b.misdelivered == 0 }},
	{name: "failed requests: create / status patch / delete", show: func(r *result) string {
		return fmt.Sprintf("%d / %d / %d", r.failedCreates, r.failedPatches, r.failedDeletes)
	}},
	{name: fmt.Sprintf("full LIST of all pods (median of %d)", listRepeats), show: duration(func(r *result) time.Duration { return r.list })},
	{name: "pod status patches", show: rate(func(r *result) float64 { return r.statusPerSec })},
	{name: "pod deletes", show: rate(func(r *result) float64 { return r.deletePerSec })},
	{name: "RSS, started", show: rss(func(r *result) []memory { return r.memStarted }, false)},
	{name: "RSS, loaded", show: rss(func(r *result) []memory { return r.memLoaded }, false), target: "≤ ½ peer",
		met: func(b, p *result) bool { return rssTotal(b.memLoaded, false) <= rssTotal(p.memLoaded, false)/2 }},
	{name: "RSS, end", show: rss(func(r *result) []memory { return r.memEnd }, false), target: "≤ ½ peer",
		met: func(b, p *result) bool { return rssTotal(b.memEnd, false) <= rssTotal(p.memEnd, false)/2 }},
	{name: "peak RSS", show: rss(func(r *result) []memory { return r.memEnd }, true)},
}

// compare lays out the figures of berth and (when not nil) the peer,
// marking berth's targets met or unmet.
func compare(b, p *result) []row {
	var rows []row
	for _, f := range figures {
		r := row{figure: f.name, berth: f.show(b), peer: "not run", target: f.target}
		if p != nil {
			r.peer = f.show(p)
		}
		switch {
		case f.met == nil:
		case p == nil:
			r.met = "not measured"
		case f.met(b, p):
			r.met = "met"
		default:
			r.met = "**unmet**"
		}
		rows = append(rows, r)
	}
	return rows
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
