package crirun

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWriteCNIConfigIsTheOnlyConflist(t *testing.T) {
	dir := t.TempDir()
	confDir, err := WriteCNIConfig(dir, Network{Name: "x-bench", Bridge: "xbench0", Subnet: "10.9.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(confDir)
	if len(entries) != 1 || entries[0].Name() != "10-x-bench.conflist" {
		t.Fatalf("net.d holds %v, want only 10-x-bench.conflist", entries)
	}
	data, _ := os.ReadFile(filepath.Join(confDir, entries[0].Name()))
	for _, want := range []string{`"name":"x-bench"`, `"bridge":"xbench0"`, `"subnet":"10.9.0.0/24"`, filepath.Join(dir, "ipam")} {
		if !strings.Contains(string(data), want) {
			t.Errorf("conflist lacks %s:\n%s", want, data)
		}
	}
}

func TestBerthRuntimeArgsMirrorEveryHost(t *testing.T) {
	args := berthRuntimeArgs("/d", "unix:///d/cri.sock", "/d/net.d", "127.0.0.1:5000", []string{"docker.io", "registry.k8s.io"})
	for _, want := range []string{"docker.io=http://127.0.0.1:5000", "registry.k8s.io=http://127.0.0.1:5000", "/d/nri.sock"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
}

func TestWaitForReportsAnExitedProcessWithItsLog(t *testing.T) {
	dir := t.TempDir()
	p, err := StartProcess("failing", filepath.Join(dir, "log"), "sh", "-c", "echo gone; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitFor(context.Background(), time.Minute, func(context.Context) error { return os.ErrNotExist })
	if err == nil || !strings.Contains(err.Error(), "failing exited") || !strings.Contains(err.Error(), "gone") {
		t.Errorf("WaitFor = %v, want the exit and the log's end", err)
	}
}

func TestProcessesMentioningFindsAChildByItsArguments(t *testing.T) {
	dir := t.TempDir()
	p, err := StartProcess("sleeper", filepath.Join(dir, "log"), "sh", "-c", "sleep 60; true", dir) // dir is $0; sh stays to run true
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	if pids := ProcessesMentioning(dir); !slices.Contains(pids, p.Pid()) {
		t.Errorf("ProcessesMentioning(%s) = %v, want %d among them", dir, pids, p.Pid())
	}
}
