package main

import (
	"strings"
	"testing"
	"time"
)

func durations(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestReportShowsMediansOverRoundsAndTheTarget(t *testing.T) {
	round := func(version string, startMs ...int) result {
		return result{version: version, measurement: measurement{
			started: durations(startMs...), ready: durations(startMs...), span: 2 * time.Second, deleteAll: 3 * time.Second,
		}}
	}
	in := reportInput{
		options:      options{pods: 2, rounds: 3},
		berthVersion: "berth v0 (abc)",
		results: map[string][]result{
			// p99 of two samples is the larger: 800 ms, 1200 ms, 900 ms → median 900 ms.
			"berth": {round("berth 1", 100, 800), round("berth 1", 100, 1200), round("berth 1", 100, 900)},
			// 2 s, 3 s, 4 s → median 3 s.
			"containerd": {round("containerd 1.6", 200, 2000), round("containerd 1.6", 200, 3000), round("containerd 1.6", 200, 4000)},
		},
		cores: 2,
		at:    time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC),
	}
	body := renderReport(in)
	for _, want := range []string{
		"| pod startup, p99 | 900 ms | 3.00 s | 0.30 | < 1 s: met |",
		"| pod startup (creation → all containers running), p50 | 100 ms | 200 ms | 0.50 |",
		"| pods started per second (first creation → last start) | 1.0 | 1.0 | 1.00 |",
		"p99 startup per round: berth runtime 800 ms, 1.20 s, 900 ms; containerd 2.00 s, 3.00 s, 4.00 s.",
		"runtimes berth 1 and containerd 1.6",
		"(2 cores, shared with other work)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("report lacks %q:\n%s", want, body)
		}
	}

	in.results["berth"] = []result{round("berth 1", 100, 1500)}
	if body := renderReport(in); !strings.Contains(body, "< 1 s: **unmet**") {
		t.Errorf("a p99 of 1.5 s is reported as meeting the target:\n%s", body)
	}
}

func TestReportNamesHowThePodsArrived(t *testing.T) {
	burst := options{pods: 100, rounds: 3}
	paced := options{pods: 100, rounds: 3, rate: 5}
	for _, c := range []struct {
		o                               options
		command, arrival, docs, heading string
	}{
		{burst, "go run ./bench/podstartup -pods 100 -rounds 3", "created at once (8 parallel clients)", "podstartup", "## Pod startup, all pods at once:"},
		{paced, "go run ./bench/podstartup -pods 100 -rate 5 -rounds 3", "created at a steady 5 pods/s (one create request every 200ms", "podstartup-paced", "## Pod startup at a steady 5 pods/s:"},
	} {
		body := renderReport(reportInput{options: c.o, results: map[string][]result{}})
		if !strings.HasPrefix(body, c.heading) {
			t.Errorf("rate %g: report does not start with %q:\n%s", c.o.rate, c.heading, body)
		}
		if !strings.Contains(body, "`"+c.command+"`") || !strings.Contains(body, "100 pods "+c.arrival) {
			t.Errorf("rate %g: report lacks %q or %q:\n%s", c.o.rate, c.command, c.arrival, body)
		}
		if got := c.o.docsSection(); got != c.docs {
			t.Errorf("rate %g: docs section %q, want %q", c.o.rate, got, c.docs)
		}
	}
}
