package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
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

	t.Run("kubectl is embedded (berth-kubectl)", func(t *testing.T) {
		out, err := exec.Command(bin, "kubectl", "version", "--client").CombinedOutput()
		if err != nil {
			t.Fatalf("berth kubectl version --client: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "Client Version: v1.37") {
			t.Errorf("unexpected output:\n%s", out)
		}
	})

	t.Run("berth execs its companions before the server's packages initialize", func(t *testing.T) {
		// A package of the server's with an init, which berth-kubectl and
		// berth-agent do not link.
		const serverPkg = "k8s.io/kubernetes/pkg/apis/core/install"
		if n := initTraceLines(t, bin, serverPkg, "version"); n != 1 {
			t.Fatalf("berth version: %d init trace lines for %s, want 1: the package names no longer fit", n, serverPkg)
		}
		for _, args := range [][]string{{"kubectl", "version", "--client"}, {"--log-level", "info", "agent", "--help"}} {
			if n := initTraceLines(t, bin, serverPkg, args...); n != 0 {
				t.Errorf("berth %v initialised %s before it execed its companion", args, serverPkg)
			}
		}
	})

	t.Run("kubectl's message catalog is berth-kubectl's alone", func(t *testing.T) {
		// Go's init trace shows what each package's init allocated: the
		// first of kubectl's packages to translate a help text loads the
		// catalog (megabytes). berth links no kubectl, so its other
		// commands never load it; berth kubectl execs berth-kubectl, which
		// loads it at init.
		const firstTranslator = "k8s.io/kubectl/pkg/cmd/options"
		if n := initTraceLines(t, bin, firstTranslator, "version"); n != 0 {
			t.Errorf("berth version: %d init trace lines for %s, want none (berth links no kubectl)", n, firstTranslator)
		}
		if b := initAllocBytes(t, bin, firstTranslator, "kubectl", "version", "--client"); b < 1<<20 {
			t.Errorf("berth kubectl: %s allocated %d bytes at init, want the catalog loaded", firstTranslator, b)
		}
		cmd := exec.Command(bin, "kubectl", "--help")
		cmd.Env = append(os.Environ(), "LANG=de_DE.UTF-8", "LC_ALL=", "LC_MESSAGES=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Aktualisiere die Labels") {
			t.Errorf("berth kubectl --help under LANG=de_DE.UTF-8 is not translated (%v):\n%s", err, out)
		}
	})
}

// initTrace runs bin with args under GODEBUG=inittrace=1 and returns the
// trace: that of berth and, when it execs a companion, the companion's.
func initTrace(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var trace bytes.Buffer
	cmd.Stderr = &trace
	if err := cmd.Run(); err != nil {
		t.Fatalf("berth %v: %v\n%s", args, err, trace.String())
	}
	return trace.String()
}

// initTraceLines counts the init trace lines of pkg when bin runs args.
func initTraceLines(t *testing.T, bin, pkg string, args ...string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(initTrace(t, bin, args...), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "init" && f[1] == pkg {
			n++
		}
	}
	return n
}

// initAllocBytes runs bin with args under GODEBUG=inittrace=1 and returns
// the bytes pkg's init allocated.
func initAllocBytes(t *testing.T, bin, pkg string, args ...string) int {
	t.Helper()
	trace := initTrace(t, bin, args...)
	// init PKG @T ms, D ms clock, N bytes, A allocs
	for _, line := range strings.Split(trace, "\n") {
		f := strings.Fields(line)
		if len(f) >= 9 && f[0] == "init" && f[1] == pkg && f[8] == "bytes," {
			n, err := strconv.Atoi(f[7])
			if err != nil {
				t.Fatalf("init trace line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no init trace line for %s in:\n%s", pkg, trace)
	return 0
}
