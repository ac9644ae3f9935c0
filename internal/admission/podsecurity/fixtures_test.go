package podsecurity_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	pstest "k8s.io/pod-security-admission/test"
)

// fixturesKubeconfigEnv, in a child test process, names the kubeconfig of
// the server that TestUpstreamFixtures started.
const fixturesKubeconfigEnv = "BERTH_PSA_FIXTURES_KUBECONFIG"

// TestUpstreamFixtures runs the library's own conformance run (every pod
// fixture of every check, at each level and version, created with dry
// run in namespaces labelled for that level and version) against a berth
// server.
//
// The run also creates each fixture as a Deployment's template, to see
// the warnings. It runs in a child process so that its report can be
// checked here: every case must pass, each pod fixture's outcome (allowed,
// or refused with the check's message) and each Deployment's warnings as
// upstream's.
func TestUpstreamFixtures(t *testing.T) {
	b := startBerth(t, "")
	kubeconfig := filepath.Join(b.dataDir, "admin.kubeconfig")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestUpstreamFixturesChild$", "-test.v", "-test.count=1", "-test.timeout=15m")
	cmd.Env = append(os.Environ(), fixturesKubeconfigEnv+"="+kubeconfig)
	out, err := cmd.CombinedOutput()
	t.Logf("the run exited with %v", err)
	checkFixtureRun(t, string(out))
}

func TestUpstreamFixturesChild(t *testing.T) {
	kubeconfig := os.Getenv(fixturesKubeconfigEnv)
	if kubeconfig == "" {
		t.Skip("run by TestUpstreamFixtures, against the server it starts")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	pstest.Run(t, pstest.Options{ClientConfig: cfg, ExemptNamespaces: []string{"kube-system"}})
}

var (
	// A failure the run reports: "    run.go:NNN: message".
	failureLine = regexp.MustCompile(`^\s+\w+\.go:\d+: (.*)$`)
	passedCase  = regexp.MustCompile(`(?m)^\s+--- PASS: TestUpstreamFixturesChild/(podsecurity-\S+)`)
	failedCase  = regexp.MustCompile(`(?m)^\s+--- FAIL: TestUpstreamFixturesChild/(podsecurity-\S+)`)
)

func checkFixtureRun(t *testing.T, out string) {
	t.Helper()
	var unexpected []string
	for _, line := range strings.Split(out, "\n") {
		if failureLine.MatchString(line) {
			unexpected = append(unexpected, line)
		}
	}
	passed, failed := len(passedCase.FindAllString(out, -1)), len(failedCase.FindAllString(out, -1))
	t.Logf("fixture cases: %d passed, %d failed", passed, failed)
	if failed > 0 {
		t.Errorf("%d fixture cases failed", failed)
	}
	if len(unexpected) > 0 {
		t.Errorf("%d pod fixture outcomes differ from upstream's:\n%s", len(unexpected), strings.Join(unexpected, "\n"))
	}
	// Each level/version has a pass_base case and a pass and a fail case per
	// check: a run that reached few of them proves nothing.
	if passed+failed < 100 || strings.Contains(out, "panic:") || !strings.Contains(out, "=== RUN   TestUpstreamFixturesChild/podsecurity-restricted-1-37_pass_base") {
		t.Errorf("the run did not reach every level and version (%d cases):\n%s", passed+failed, tail(out, 60))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
