package agentcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth/berth/internal/cli/clibase"
)

// run runs `berth ARGS` with the agent as its one subcommand, as
// berth-agent does.
func run(t *testing.T, args ...string) error {
	t.Helper()
	var out bytes.Buffer
	root := clibase.NewRoot(&out, &out)
	root.AddCommand(NewCommand())
	root.SetArgs(args)
	return root.Execute()
}

// TestAgentGCFlagsRefuseBadValues: a bad garbage-collection setting is one
// clear line, and the agent touches nothing (its data directory is not
// even created).
func TestAgentGCFlagsRefuseBadValues(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--image-gc-high-threshold", "120"}, "high threshold 120%"},
		{[]string{"--image-gc-low-threshold", "90"}, "low threshold 90% is above the high threshold 85%"},
		{[]string{"--maximum-dead-containers-per-container", "0"}, "keep at least 1"},
		{[]string{"--minimum-image-ttl-duration", "-1m"}, "must not be negative"},
	} {
		dataDir := filepath.Join(t.TempDir(), "agent")
		args := append([]string{"agent", "--node-name", "node-a", "--kubeconfig", "/nonexistent", "--runtime-endpoint", "unix:///nonexistent.sock", "--data-dir", dataDir}, tc.flags...)
		err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line about %q", tc.flags, err, tc.want)
		}
		if _, statErr := os.Stat(dataDir); !os.IsNotExist(statErr) {
			t.Errorf("%v: data directory created (%v)", tc.flags, statErr)
		}
	}
}

// TestAgentRefusesUnsafeSysctlsNotNamespaced: as the kubelet, an allowed
// unsafe sysctl must be namespaced; anything else stops the agent at start.
func TestAgentRefusesUnsafeSysctlsNotNamespaced(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "agent")
	err := run(t, "agent", "--node-name", "node-a", "--kubeconfig", "/nonexistent", "--runtime-endpoint", "unix:///nonexistent.sock",
		"--data-dir", dataDir, "--allowed-unsafe-sysctls", "net.core.*,kernel.panic")
	want := `--allowed-unsafe-sysctls: the sysctls "kernel.panic" are not known to be namespaced`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("%v, want one line %q", err, want)
	}
	if _, statErr := os.Stat(dataDir); !os.IsNotExist(statErr) {
		t.Errorf("data directory created (%v)", statErr)
	}
}
