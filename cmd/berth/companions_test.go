package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentAndKubectlAreCompanions: `berth agent` and `berth kubectl` exec
// berth-agent and berth-kubectl, built beside berth, and behave as before:
// the agent's flag errors are one line from berth with exit status 1,
// berth's own flags before the subcommand reach the companion, and kubectl
// runs its own exit status path.
func TestAgentAndKubectlAreCompanions(t *testing.T) {
	bin := buildBerth(t)
	for _, companion := range []string{"berth-agent", "berth-kubectl"} {
		if out, err := exec.Command(filepath.Join(filepath.Dir(bin), companion), "--help").CombinedOutput(); err != nil {
			t.Errorf("%s beside berth: %v\n%s", companion, err, out)
		}
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"an agent flag error is one line": {
			[]string{"agent", "--node-name", "node-a", "--kubeconfig", "/nonexistent", "--runtime-endpoint", "unix:///nonexistent.sock",
				"--data-dir", filepath.Join(t.TempDir(), "agent"), "--image-gc-high-threshold", "120"},
			"berth: ", // then the agent's own message
		},
		"--log-level before agent reaches berth-agent": {
			[]string{"--log-level", "loud", "agent"},
			`berth: invalid --log-level "loud"`,
		},
		"kubectl's own errors": {
			[]string{"kubectl", "version", "--client", "--output", "nonsense"},
			"--output must be 'yaml' or 'json'",
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(bin, tc.args...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("berth %v: %v, want exit status 1\n%s", tc.args, err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("berth %v: want one line containing %q, got:\n%s", tc.args, tc.want, out)
			}
		})
	}
}
