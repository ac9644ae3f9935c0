// Package kubectltest runs the real upstream kubectl, with default flags,
// against a test server. kubectl runs as a child process of the test binary
// itself (re-executed with an environment marker), so its os.Exit and global
// flags stay out of the tests and no separate binary is needed.
package kubectltest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	kubectlcmd "k8s.io/kubectl/pkg/cmd"
)

const childEnv = "BERTH_TEST_RUN_KUBECTL"

// RunIfChild must be called first in TestMain: in the re-executed child it
// runs kubectl with the process arguments and exits.
func RunIfChild() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	cmd := kubectlcmd.NewDefaultKubectlCommand()
	cmd.SetArgs(os.Args[1:])
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// Runner runs kubectl against one server with its own kubeconfig, home and cache.
type Runner struct {
	t          testing.TB
	dir        string
	kubeconfig string
}

// New writes a kubeconfig for server (no credentials: test servers
// authenticate by other means) in the namespace "default".
func New(t testing.TB, server string) *Runner {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
`, server)
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Runner{t: t, dir: dir, kubeconfig: kubeconfig}
}

// Run returns kubectl's combined output and whether it exited 0; env adds
// variables for this run.
func (k *Runner) Run(stdin string, env []string, args ...string) (string, bool) {
	k.t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", filepath.Join(k.dir, "cache")}, args...)...)
	cmd.Env = append(append(os.Environ(), childEnv+"=1", "HOME="+k.dir, "KUBECONFIG="), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		k.t.Fatalf("running kubectl: %v", err)
	}
	return out.String(), err == nil
}

// Must runs kubectl and fails the test unless it succeeds with every want in its output.
func (k *Runner) Must(stdin string, args []string, wants ...string) string {
	k.t.Helper()
	out, ok := k.Run(stdin, nil, args...)
	if !ok {
		k.t.Fatalf("kubectl %s failed:\n%s", strings.Join(args, " "), out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			k.t.Fatalf("kubectl %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
	return out
}
