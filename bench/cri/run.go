package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/berth/berth/bench/internal/crirun"
	"github.com/berth/berth/bench/internal/report"
	"github.com/berth/berth/internal/testkit/registry"
)

// round is what one runtime measured in one round.
type round struct {
	version    string
	samples    samples
	idle       memory // the daemon just started, answering CRI
	afterBench memory // the daemon after the critest runs
	loaded     loaded
}

func run(ctx context.Context, logger *slog.Logger, o options) error {
	if err := crirun.RequireRoot(); err != nil {
		return err
	}
	for _, bin := range []string{o.berth, o.critest} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%w (run hack/setup.sh and hack/build.sh)", err)
		}
	}
	if err := crirun.RequireCompanions(o.berth); err != nil {
		return err
	}
	berth, err := filepath.Abs(o.berth)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(o.workDir, "bcri-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	loadBefore := report.LoadAverage()
	logger.Info("starting the test registry (builds the critest images)")
	reg, addr, err := startRegistry(ctx, work)
	if err != nil {
		return err
	}
	defer reg.Stop(10 * time.Second)
	pullBytes, err := imageBytes(ctx, addr, pullImage)
	if err != nil {
		return err
	}

	results := map[string][]round{}
	for r := range o.rounds {
		for _, kind := range crirun.RoundOrder(r) {
			logger.Info("measuring", "runtime", kind, "round", r+1, "of", o.rounds)
			res, err := measure(ctx, logger, o, berth, kind, filepath.Join(work, fmt.Sprintf("%s%d", kind[:1], r)), addr)
			if err != nil {
				return err
			}
			results[kind] = append(results[kind], res)
		}
		// Written after every round, so a run cut short (the machine is
		// shared, rounds are long) still leaves the rounds it finished.
		if err := writeReport(o, results, pullBytes, loadBefore); err != nil {
			return err
		}
	}
	return nil
}

func writeReport(o options, results map[string][]round, pullBytes int64, loadBefore string) error {
	body := renderReport(o, results, pullBytes, loadBefore, report.LoadAverage(), time.Now().UTC())
	fmt.Print(body)
	if o.out == "" {
		return nil
	}
	return report.Write(o.out, "cri", body)
}

// measure starts one runtime fresh, runs critest's benchmarks against it,
// then keeps o.runningPod pods running, reading memory at each stage, and
// removes everything it started.
func measure(ctx context.Context, logger *slog.Logger, o options, berth, kind, dir, registry string) (round, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return round{}, err
	}
	t, err := startTarget(ctx, logger, kind, berth, dir, registry)
	if err != nil {
		return round{}, fmt.Errorf("start %s: %w", kind, err)
	}
	defer t.close()
	res := round{version: t.Version}
	if res.idle, err = readMemory(t.Proc.Pid()); err != nil {
		return round{}, err
	}
	if res.samples, err = runCritest(ctx, o.critest, t, o.pods, o.pulls); err != nil {
		return round{}, err
	}
	if res.afterBench, err = readMemory(t.Proc.Pid()); err != nil {
		return round{}, err
	}
	if kind == "berth" {
		floor, err := runcFloor(ctx, t, o.pods)
		if err != nil {
			return round{}, fmt.Errorf("runc alone: %w", err)
		}
		maps.Copy(res.samples, floor)
	}
	if res.loaded, err = runPods(ctx, t, o.runningPod); err != nil {
		return round{}, err
	}
	return res, nil
}

// imageBytes is the size of ref as the registry serves it: manifest,
// config and compressed layers, i.e. what a pull transfers.
func imageBytes(ctx context.Context, registryHost, ref string) (int64, error) {
	r, err := registry.Reference(registryHost, ref)
	if err != nil {
		return 0, err
	}
	img, err := remote.Image(r, remote.WithContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("image %s: %w", ref, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	total := int64(len(raw)) + manifest.Config.Size
	for _, l := range manifest.Layers {
		total += l.Size
	}
	return total, nil
}
