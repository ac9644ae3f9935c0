package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadLifecycleSplitsOperationsAndAddsCreateStart(t *testing.T) {
	got := samples{}
	if err := readLifecycle(filepath.Join("testdata", "container_benchmark_data.json"), got); err != nil {
		t.Fatal(err)
	}
	want := map[string][]time.Duration{
		"CreateContainer": {10 * time.Millisecond, 30 * time.Millisecond},
		"StartContainer":  {20 * time.Millisecond, 40 * time.Millisecond},
		createStart:       {30 * time.Millisecond, 70 * time.Millisecond},
	}
	for op, w := range want {
		if !slices.Equal(got[op], w) {
			t.Errorf("%s = %v, want %v", op, got[op], w)
		}
	}
}

func TestReadLifecycleRefusesMalformedResults(t *testing.T) {
	for name, body := range map[string]string{
		"no samples":      `{"operationsNames":["CreatePod"],"datapoints":[]}`,
		"short datapoint": `{"operationsNames":["CreatePod","StopPod"],"datapoints":[{"operationsDurationsNs":[1,2]},{"operationsDurationsNs":[1]}]}`,
		"not JSON":        `CreatePod 1ms`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.json")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			got := samples{}
			err := readLifecycle(path, got)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want an error naming %s", err, path)
			}
			if len(got) != 0 {
				t.Errorf("samples added from a malformed file: %v", got)
			}
		})
	}
}

func TestReadMemoryOfThisProcess(t *testing.T) {
	m, err := readMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.rss <= 0 || m.anon <= 0 || m.anon > m.rss {
		t.Errorf("memory = %+v, want 0 < anon <= rss", m)
	}
}
