package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestCreateContainerRefusesLogPathsOutOfTheLogDirectory: a log path that
// leaves the sandbox's log directory, as text or through a planted
// symlink, is InvalidArgument; no container is created and no host file
// is touched.
func TestCreateContainerRefusesLogPathsOutOfTheLogDirectory(t *testing.T) {
	h := newHarness(t)
	sbID, sbCfg := h.runSandbox("logs")
	logDir := sbCfg.LogDirectory
	host := t.TempDir() // stands for any host directory
	hostFile := filepath.Join(host, "crontab")
	if err := os.WriteFile(hostFile, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, link := range []struct{ name, target string }{
		{"dirlink", host},
		{"filelink.log", hostFile},
		{"dangling.log", filepath.Join(host, "new.log")},
	} {
		if err := os.Symlink(link.target, filepath.Join(logDir, link.name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(logDir, "fifo.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, logPath := range []string{
		"../escape.log",
		"c/../../escape.log",
		filepath.Join(host, "abs.log"),
		"dirlink/c.log",
		"dirlink/sub/c.log",
		"filelink.log",
		"dangling.log",
		"fifo.log",
	} {
		t.Run(logPath, func(t *testing.T) {
			cfg := containerConfig("c")
			cfg.LogPath = logPath
			_, err := h.client.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{
				PodSandboxId: sbID, Config: cfg, SandboxConfig: sbCfg,
			})
			wantCode(t, err, codes.InvalidArgument)
			if !strings.Contains(status.Convert(err).Message(), "log_path") {
				t.Errorf("unclear error: %v", err)
			}
		})
	}
	list, err := h.client.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Containers) != 0 {
		t.Errorf("%d containers created with refused log paths", len(list.Containers))
	}
	if got := lsNames(t, host); got != "crontab" {
		t.Errorf("host directory now holds %s", got)
	}
	if data, err := os.ReadFile(hostFile); err != nil || string(data) != "host" {
		t.Errorf("host file now %q, %v", data, err)
	}
	if got := lsNames(t, filepath.Dir(logDir)); got != filepath.Base(logDir) {
		t.Errorf("files made beside the log directory: %s", got)
	}

	// A nested path inside the directory is made and used.
	cfg := containerConfig("ok")
	cfg.LogPath = "ok/0.log"
	if _, err := h.client.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{
		PodSandboxId: sbID, Config: cfg, SandboxConfig: sbCfg,
	}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(filepath.Join(logDir, "ok/0.log")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("log file not made: %v", err)
	}
}

func lsNames(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return strings.Join(names, ",")
}
