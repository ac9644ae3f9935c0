package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/berth/berth/bench/internal/crirun"
)

// pullImage is the image critest's pull benchmark uses by default (the
// first of its listing images), served by the test registry.
const pullImage = "public.ecr.aws/docker/library/busybox:1.35.0-glibc"

// critestParams is critest's -benchmarking-params-file (YAML; JSON is
// YAML). Samples run one at a time, as the kubelet's sync of one pod would.
func critestParams(pods, pulls int) map[string]any {
	return map[string]any{
		"podsNumber": pods, "podsNumberParallel": 1, "podBenchmarkTimeoutSeconds": 600,
		"containersNumber": pods, "containersNumberParallel": 1, "containerBenchmarkTimeoutSeconds": 600,
		"imagesNumber": pulls, "imagesNumberParallel": 1, "imageBenchmarkTimeoutSeconds": 600,
		"imagePullingBenchmarkImage":               pullImage,
		"podContainerStartBenchmarkTimeoutSeconds": 600,
	}
}

// samples are the latencies of each CRI operation critest measured.
type samples map[string][]time.Duration

// runCritest runs `critest -benchmark` against t and returns its samples,
// read from the JSON files it writes into its output directory.
func runCritest(ctx context.Context, critest string, t *target, pods, pulls int) (samples, error) {
	dir := filepath.Join(t.Dir, "critest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	params, err := json.Marshal(critestParams(pods, pulls))
	if err != nil {
		return nil, err
	}
	paramsFile := filepath.Join(dir, "params.yaml")
	if err := os.WriteFile(paramsFile, params, 0o644); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "critest.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, critest, "-benchmark",
		"-runtime-endpoint", t.Endpoint, "-image-endpoint", t.Endpoint,
		"-benchmarking-params-file", paramsFile, "-benchmarking-output-dir", dir,
		"-ginkgo.timeout", "60m")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Run(); err != nil {
		// The log goes with the target's directory: its end goes into the error.
		return nil, fmt.Errorf("critest -benchmark against %s: %w; log ends:\n%s", t.Name, err, crirun.TailOf(logFile.Name(), 30))
	}
	all := samples{}
	for _, file := range []string{"pod_benchmark_data.json", "container_benchmark_data.json", "image_lifecycle_benchmark_data.json"} {
		if err := readLifecycle(filepath.Join(dir, file), all); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// lifecycleResults is the part of critest's LifecycleBenchmarksResultsSet
// (sigs.k8s.io/cri-tools/pkg/benchmark) the bench reads.
type lifecycleResults struct {
	OperationsNames []string `json:"operationsNames"`
	Datapoints      []struct {
		OperationsDurationsNs []int64 `json:"operationsDurationsNs"`
	} `json:"datapoints"`
}

// readLifecycle adds the per-operation durations of one critest result
// file to into. A datapoint with the wrong number of durations means
// critest's format changed: an error, not a silent skip.
func readLifecycle(path string, into samples) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("critest result: %w", err)
	}
	var res lifecycleResults
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("critest result %s: %w", path, err)
	}
	if len(res.Datapoints) == 0 {
		return fmt.Errorf("critest result %s: no samples", path)
	}
	for i, dp := range res.Datapoints {
		if len(dp.OperationsDurationsNs) != len(res.OperationsNames) {
			return fmt.Errorf("critest result %s: sample %d has %d durations for operations %v",
				path, i, len(dp.OperationsDurationsNs), res.OperationsNames)
		}
	}
	for _, dp := range res.Datapoints {
		for j, name := range res.OperationsNames {
			into[name] = append(into[name], time.Duration(dp.OperationsDurationsNs[j]))
		}
	}
	// CreateContainer plus StartContainer of one sample, which has a target.
	c, s := slices.Index(res.OperationsNames, "CreateContainer"), slices.Index(res.OperationsNames, "StartContainer")
	if c >= 0 && s >= 0 {
		for _, dp := range res.Datapoints {
			into[createStart] = append(into[createStart], time.Duration(dp.OperationsDurationsNs[c]+dp.OperationsDurationsNs[s]))
		}
	}
	return nil
}

// createStart names the derived sample CreateContainer + StartContainer.
const createStart = "CreateContainer+StartContainer"
