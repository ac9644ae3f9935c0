package main

import (
	"strings"
	"testing"
	"time"
)

func fakeResult(name string, create float64, p99 time.Duration, procs ...memory) *result {
	// CPU per create as if the server were the only thing on one core.
	return &result{target: name, createPerSec: create, cpuPerCreate: time.Duration(float64(time.Second) / create),
		statusPerSec: create / 2, deletePerSec: create,
		watchP50: p99 / 2, watchP99: p99, list: 40 * time.Millisecond,
		memStarted: procs, memLoaded: procs, memEnd: procs}
}

func rowFor(t *testing.T, rows []row, figure string) row {
	t.Helper()
	for _, r := range rows {
		if r.figure == figure {
			return r
		}
	}
	t.Fatalf("no row %q", figure)
	return row{}
}

func TestCompareMarksTargets(t *testing.T) {
	const mib = 1 << 20
	berth := fakeResult("berth", 1200, 60*time.Millisecond, memory{name: "berth server", rss: 200 * mib, peak: 250 * mib})
	peer := fakeResult("peer", 500, 150*time.Millisecond,
		memory{name: "etcd", rss: 100 * mib, peak: 120 * mib}, memory{name: "kube-apiserver", rss: 300 * mib, peak: 400 * mib})
	rows := compare(berth, peer)
	if r := rowFor(t, rows, "pod creates"); r.berth != "1200/s" || r.peer != "500/s" || r.target != "" {
		t.Errorf("creates (reported, judged by CPU per create): %+v", r)
	}
	if r := rowFor(t, rows, "server CPU per pod create"); r.berth != "833 µs" || r.peer != "2000 µs" || r.met != "met" {
		t.Errorf("CPU per create: %+v", r)
	}
	if r := rowFor(t, rows, "watch delivery p99"); r.berth != "60.0 ms" || r.peer != "150 ms" || r.met != "met" {
		t.Errorf("watch p99: %+v", r)
	}
	if r := rowFor(t, rows, "RSS, loaded"); r.peer != "etcd 100 MiB + kube-apiserver 300 MiB = 400 MiB" || r.met != "met" {
		t.Errorf("RSS loaded: %+v", r)
	}
	if r := rowFor(t, rows, "peak RSS"); r.berth != "250 MiB" || !strings.HasSuffix(r.peer, "= 520 MiB") {
		t.Errorf("peak: %+v", r)
	}

	slow := fakeResult("berth", 900, 100*time.Millisecond, memory{name: "berth server", rss: 201 * mib})
	rows = compare(slow, peer)
	for _, figure := range []string{"server CPU per pod create", "watch delivery p99", "RSS, loaded"} {
		if r := rowFor(t, rows, figure); r.met != "**unmet**" {
			t.Errorf("%s: met = %q, want unmet", figure, r.met)
		}
	}
}

func TestCompareWithoutPeer(t *testing.T) {
	berth := fakeResult("berth", 1200, 60*time.Millisecond, memory{name: "berth server", rss: 1 << 20})
	for _, r := range compare(berth, nil) {
		if r.peer != "not run" {
			t.Errorf("%s: peer column %q, want not run", r.figure, r.peer)
		}
		if r.target != "" && r.met != "not measured" {
			t.Errorf("%s: met %q, want not measured", r.figure, r.met)
		}
	}
}

func TestRenderReportHasOneTablePerShape(t *testing.T) {
	berth := fakeResult("berth", 1200, 60*time.Millisecond, memory{name: "berth server", rss: 1 << 20})
	doc := renderReport(runInfo{command: "go run ./bench/api --shape both", date: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), loadBefore: "3.1", loadEnd: "4.2", berth: "built from this checkout at abc1234"},
		[]comparison{{shape: shapes["small"], berth: berth}, {shape: shapes["large"], berth: berth}})
	for _, want := range []string{"`go run ./bench/api --shape both`", "2026-11-30 03:00 UTC", "load average 3.1 at the start, 4.2 at the end", "berth: built from this checkout at abc1234.",
		"### 100 nodes, 3000 pods, 32 clients", "### 1000 nodes, 10000 pods, 64 clients", "| server CPU per pod create | 833 µs | not run | ≤ ½ peer | not measured |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q:\n%s", want, doc)
		}
	}
}

func TestStatusField(t *testing.T) {
	status := []byte("Name:\tberth\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n")
	if got, err := statusField(status, "VmRSS"); err != nil || got != 100<<20 {
		t.Errorf("VmRSS = %d, %v; want %d", got, err, 100<<20)
	}
	if _, err := statusField(status, "VmSwap"); err == nil {
		t.Error("missing field: no error")
	}
	if _, err := statusField([]byte("VmRSS:\t12 pages\n"), "VmRSS"); err == nil {
		t.Error("unexpected unit: no error")
	}
}
