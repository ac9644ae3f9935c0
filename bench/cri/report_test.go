package main

import (
	"strings"
	"testing"
	"time"
)

func fakeRound(runPod, createStartEach time.Duration, idleKiB, helpersKiB int64, helpers int) round {
	return round{
		version: "v",
		samples: samples{
			"CreatePod": {runPod, runPod}, createStart: {createStartEach},
			"CreateContainer": {createStartEach / 2}, "StartContainer": {createStartEach / 2},
			"StopPod": {time.Millisecond}, "RemovePod": {time.Millisecond}, "PullImage": {time.Millisecond},
		},
		idle: memory{idleKiB, idleKiB / 4}, afterBench: memory{idleKiB, idleKiB / 4},
		loaded: loaded{daemon: memory{idleKiB, idleKiB / 4}, helpers: memory{helpersKiB, helpersKiB / 4}, count: helpers, pods: 10},
	}
}

// row returns the report line starting with label.
func row(t *testing.T, report, label string) string {
	t.Helper()
	for _, line := range strings.Split(report, "\n") {
		if strings.HasPrefix(line, "| "+label+" |") {
			return line
		}
	}
	t.Fatalf("no row %q in:\n%s", label, report)
	return ""
}

func TestReportMarksTargetsMetAndUnmet(t *testing.T) {
	o := options{rounds: 1, pods: 2, pulls: 1, runningPod: 10}
	results := map[string][]round{
		// Sandboxes at 0.4× containerd's (met), create+start at 0.6× (unmet),
		// daemon at 2× (unmet), helpers per pod 0.5× (met).
		"berth":      {fakeRound(40*time.Millisecond, 60*time.Millisecond, 2000, 1000, 20)},
		"containerd": {fakeRound(100*time.Millisecond, 100*time.Millisecond, 1000, 2000, 10)},
	}
	report := renderReport(o, results, 2_500_000, "1.0", "2.0", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	for label, want := range map[string]string{
		"RunPodSandbox":                    "| 40.0 ms / 40.0 ms | 100.0 ms / 100.0 ms | 0.40 | ≤ 0.5: **met** |",
		"CreateContainer + StartContainer": "| 0.60 | ≤ 0.5: **unmet** |",
		"daemon RSS, idle":                 "| 2.00 | ≤ 0.5: **unmet** |",
		"monitor (berth-monitor) vs containerd-shim-runc-v2, per pod": "| 0.50 | ≤ 1: **met** |",
	} {
		if got := row(t, report, label); !strings.HasSuffix(got, want) {
			t.Errorf("row %q = %q, want it to end %q", label, got, want)
		}
	}
	if !strings.Contains(report, "PullImage (2.5 MB, loopback)") {
		t.Errorf("pull image size missing:\n%s", report)
	}
	if strings.Contains(report, "Partial") {
		t.Errorf("a complete run is reported partial:\n%s", report)
	}
	o.rounds = 3
	if report := renderReport(o, results, 1, "", "", time.Now()); !strings.Contains(report, "Partial: 1 of 3 rounds done") {
		t.Errorf("a cut-short run is not reported partial:\n%s", report)
	}
}
