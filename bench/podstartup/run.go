package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/berth/berth/bench/internal/crirun"
	"github.com/berth/berth/bench/internal/report"
)

// result is one runtime's measurement in one round, with the runtime's
// own version string.
type result struct {
	version string
	measurement
}

func run(ctx context.Context, logger *slog.Logger, o options) error {
	if err := crirun.RequireRoot(); err != nil {
		return err
	}
	berth, err := filepath.Abs(o.berth)
	if err != nil {
		return err
	}
	if err := crirun.RequireCompanions(berth); err != nil {
		return err
	}
	berthVersion, err := versionLine(berth)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(o.workDir, "bps-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	loadBefore := report.LoadAverage()
	registryHost, stopRegistry, err := startRegistry(ctx)
	if err != nil {
		return err
	}
	defer stopRegistry()

	results := map[string][]result{}
	for r := range o.rounds {
		for _, kind := range crirun.RoundOrder(r) {
			logger.Info("measuring", "runtime", kind, "round", r+1, "of", o.rounds, "pods", o.pods)
			name := fmt.Sprintf("%s%d", kind, r+1)
			res, err := measureOnce(ctx, logger, o, berth, kind, filepath.Join(work, name), registryHost)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", kind, r+1, err)
			}
			logger.Info("measured", "runtime", kind, "round", r+1, "p50", report.Quantile(res.started, 0.5), "p99", report.Quantile(res.started, 0.99))
			results[kind] = append(results[kind], res)
		}
	}
	body := renderReport(reportInput{
		options: o, berthVersion: berthVersion, results: results,
		loadBefore: loadBefore, loadAfter: report.LoadAverage(), cores: runtime.NumCPU(), at: time.Now().UTC(),
	})
	fmt.Print(body)
	if !o.writeDocs {
		return nil
	}
	return report.Write(o.docs, o.docsSection(), body)
}

// measureOnce starts a server, the runtime kind and an agent, all fresh in
// dir, measures the pods, and tears everything down (the runtime last, so
// the agent's deletions reach it; then whatever is left is removed).
func measureOnce(ctx context.Context, logger *slog.Logger, o options, berth, kind, dir, registryHost string) (result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	if o.logDir != "" {
		defer keepLogs(logger, dir, filepath.Join(o.logDir, filepath.Base(dir)))
	}
	srv, err := startServer(ctx, berth, dir)
	if err != nil {
		return result{}, err
	}
	defer srv.stop()
	rt, err := startRuntime(ctx, logger, kind, berth, filepath.Join(dir, "runtime"), registryHost)
	if err != nil {
		return result{}, fmt.Errorf("start %s: %w", kind, err)
	}
	defer rt.Close()
	agent, err := startAgent(ctx, berth, dir, "podstartup-"+kind, srv, rt)
	if err != nil {
		return result{}, err
	}
	defer agent.Stop(30 * time.Second)
	before, err := sampleCPU(srv.proc, agent, rt)
	if err != nil {
		return result{}, err
	}
	var cpu cpuSample
	var cpuErr error
	m, err := measurePods(ctx, srv.client, o.pods, o.rate, func() {
		var after cpuSample
		after, cpuErr = sampleCPU(srv.proc, agent, rt)
		cpu = after.sub(before)
	})
	if err != nil {
		return result{}, fmt.Errorf("%w\nagent log ends:\n%s", err, crirun.TailOf(agent.LogPath(), 20))
	}
	if cpuErr != nil {
		return result{}, cpuErr
	}
	m.cpu = cpu
	return result{version: rt.Version, measurement: m}, nil
}

// keepLogs copies the *.log files of dir into dest.
func keepLogs(logger *slog.Logger, dir, dest string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if err := os.MkdirAll(dest, 0o755); err != nil {
		logger.Warn("keeping logs", "err", err)
		return
	}
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err == nil {
			err = os.WriteFile(filepath.Join(dest, filepath.Base(l)), data, 0o644)
		}
		if err != nil {
			logger.Warn("keeping logs", "file", l, "err", err)
		}
	}
}

// versionLine is the first line of `berth version` (version and commit follow).
func versionLine(berth string) (string, error) {
	out, err := exec.Command(berth, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", berth, err)
	}
	var version, commit string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "berth ") {
			version = strings.TrimSpace(line)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "git commit:"); ok {
			commit = strings.TrimSpace(v)
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	return fmt.Sprintf("%s (%s)", version, commit), nil
}
