package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/berth/berth/internal/testkit/berthbin"
)

// berthBin is the real binary, built once so that build information
// (module versions, VCS revision) is what a user's build carries.
var berthBin string

func TestMain(m *testing.M) { berthbin.Main(m, &berthBin) }

func buildBerth(t *testing.T) string {
	t.Helper()
	return berthBin
}

func TestBinary(t *testing.T) {
	bin := buildBerth(t)

	t.Run("version names the API versions it speaks", func(t *testing.T) {
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("berth version: %v\n%s", err, out)
		}
		for _, want := range []string{"kubernetes api: v1.37.2", "cri api:        v1", "git commit:"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("lacks %q:\n%s", want, out)
			}
		}
		// Go stamps the revision when the module root holds a .git
		// directory (a clone; not a `git worktree`, whose .git is a file).
		if st, err := os.Stat("../../.git"); err == nil && st.IsDir() && strings.Contains(string(out), "git commit:     unknown") {
			t.Errorf("no VCS revision in a build from a git clone:\n%s", out)
		}
	})

	t.Run("a bad flag exits non-zero with one line", func(t *testing.T) {
		out, err := exec.Command(bin, "version", "--bogus").CombinedOutput()
		if err == nil {
			t.Fatal("exit status 0")
		}
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "berth: ") {
			t.Errorf("want one line starting with \"berth: \", got:\n%s", out)
		}
	})

	t.Run("kubectl is embedded", func(t *testing.T) {
		out, err := exec.Command(bin, "kubectl", "version", "--client").CombinedOutput()
		if err != nil {
			t.Fatalf("berth kubectl version --client: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "Client Version: v1.37") {
			t.Errorf("unexpected output:\n%s", out)
		}
	})
}
