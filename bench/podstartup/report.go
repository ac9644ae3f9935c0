package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/berth/berth/bench/internal/report"
)

// reportInput is everything the report shows.
type reportInput struct {
	options
	berthVersion          string
	results               map[string][]result // by runtime kind, one per round
	loadBefore, loadAfter string
	cores                 int
	at                    time.Time
}

// target is berth runtime's goal for p99 pod startup latency.
const target = time.Second

// figure is one row: how to read it from one round's result.
type figure struct {
	name   string
	value  func(result) float64 // seconds, or a rate
	format func(float64) string
}

var figures = []figure{
	{"pod startup (creation → all containers running), p50", func(r result) float64 { return seconds(report.Quantile(r.started, 0.5)) }, formatSeconds},
	{"pod startup, p99", func(r result) float64 { return seconds(report.Quantile(r.started, 0.99)) }, formatSeconds},
	{"pod startup, max", func(r result) float64 { return seconds(report.Quantile(r.started, 1)) }, formatSeconds},
	{"creation → Ready, p50", func(r result) float64 { return seconds(report.Quantile(r.ready, 0.5)) }, formatSeconds},
	{"creation → Ready, p99", func(r result) float64 { return seconds(report.Quantile(r.ready, 0.99)) }, formatSeconds},
	{"containers' startedAt → seen running in the watch, p50 (startedAt has 1 s resolution)", func(r result) float64 { return seconds(report.Quantile(r.reportDelay, 0.5)) }, formatSeconds},
	{"containers' startedAt → seen running in the watch, p99", func(r result) float64 { return seconds(report.Quantile(r.reportDelay, 0.99)) }, formatSeconds},
	{"pods started per second (first creation → last start)", func(r result) float64 { return float64(len(r.started)) / seconds(r.span) }, formatRate},
	{"CPU per pod until all started: berth server", cpuPerPod(func(c cpuSample) float64 { return c.server }), formatSeconds},
	{"… berth agent", cpuPerPod(func(c cpuSample) float64 { return c.agent }), formatSeconds},
	{"… runtime daemon (with the runc and CNI runs it waited for)", cpuPerPod(func(c cpuSample) float64 { return c.runtime }), formatSeconds},
	{"… berth-monitors / containerd-shims (with their runc runs)", cpuPerPod(func(c cpuSample) float64 { return c.helpers }), formatSeconds},
	{"… all of the above", cpuPerPod(func(c cpuSample) float64 { return c.server + c.agent + c.runtime + c.helpers }), formatSeconds},
	{"deletion: request → last pod object gone", func(r result) float64 { return seconds(r.deleteAll) }, formatSeconds},
}

// cpuPerPod reads one part of a round's CPU sample, divided by its pods.
func cpuPerPod(part func(cpuSample) float64) func(result) float64 {
	return func(r result) float64 {
		if len(r.started) == 0 {
			return 0
		}
		return part(r.cpu) / float64(len(r.started))
	}
}

func renderReport(in reportInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Pod startup%s: berth runtime vs containerd under berth agent (bench/podstartup)\n\n", in.headingSuffix())
	fmt.Fprintf(&b, "`%s` (as root), %s; 1-minute load average %s at the start, %s at the end (%d cores, shared with other work). ",
		in.commandLine(), in.at.Format("2006-01-02 15:04 UTC"), in.loadBefore, in.loadAfter, in.cores)
	fmt.Fprintf(&b, "%s as server and agent in both columns; runtimes %s and %s, with the same runc, CNI plugins (bridge, host-local, portmap) and images, pre-pulled from a loopback registry. ",
		in.berthVersion, versionOf(in.results["berth"]), versionOf(in.results["containerd"]))
	fmt.Fprintf(&b, "%d pods %s on one node; each figure is the median over %d round(s).\n\n", in.pods, in.arrival(), in.rounds)
	b.WriteString("| figure | berth runtime | containerd | berth / containerd | target |\n|---|---|---|---|---|\n")
	for i, f := range figures {
		bv, cv := medianOf(in.results["berth"], f.value), medianOf(in.results["containerd"], f.value)
		goal := ""
		if i == 1 {
			goal = "< 1 s: " + metOrNot(bv < seconds(target))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.name, f.format(bv), f.format(cv), ratio(bv, cv), goal)
	}
	fmt.Fprintf(&b, "| pods seen with a restarted container, all rounds | %d | %d |  |  |\n\n", restarts(in.results["berth"]), restarts(in.results["containerd"]))
	fmt.Fprintf(&b, "p99 startup per round: berth runtime %s; containerd %s.\n\n", perRound(in.results["berth"]), perRound(in.results["containerd"]))
	b.WriteString(`How it is measured: each measurement starts a fresh control-plane-only ` + "`berth server`" + `, the runtime, and one ` + "`berth agent`" + `
joined with the server's token over that runtime's CRI socket (same binary and flags for both runtimes); the pod
and pause images are pulled through CRI before the agent starts, and pods use imagePullPolicy IfNotPresent. A
watch on the pods records, per pod, the first event whose containerStatuses are all in state running and the first
whose Ready condition is True; latency is from the start of that pod's create request (the Kubernetes pod startup
SLI: scheduling, the agent's sync, sandbox and container start, and the status write are all inside it). The pods
are then deleted gracefully and the agent removes their sandboxes before the objects go. CPU is user + system time
from /proc/PID/stat (with the children each process waited for), from the first creation until every pod started,
divided by the pods: on otherwise idle cores, the sum over the cores bounds how fast the pods could start. Target: p99 under 1 s
with berth runtime (the Kubernetes SLO is 5 s).
`)
	return b.String()
}

func versionOf(rs []result) string {
	if len(rs) == 0 {
		return "?"
	}
	return rs[0].version
}

func medianOf(rs []result, value func(result) float64) float64 {
	vs := make([]float64, 0, len(rs))
	for _, r := range rs {
		vs = append(vs, value(r))
	}
	return report.Median(vs)
}

func restarts(rs []result) int {
	n := 0
	for _, r := range rs {
		n += r.restarts
	}
	return n
}

func perRound(rs []result) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, formatSeconds(seconds(report.Quantile(r.started, 0.99))))
	}
	return strings.Join(parts, ", ")
}

func seconds(d time.Duration) float64 { return d.Seconds() }

func formatSeconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

func formatRate(r float64) string { return fmt.Sprintf("%.1f", r) }

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func metOrNot(ok bool) string {
	if ok {
		return "met"
	}
	return "**unmet**"
}
