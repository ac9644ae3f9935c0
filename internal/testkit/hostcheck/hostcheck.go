// Package hostcheck lets a test declare the real host components it needs
// (root, runc, CNI plugins, busybox-static, ...). A missing one skips the
// test with what to install, except when BERTH_STRICT_HOST=1 (the test
// command and CI set it): then it fails, so a missing prerequisite can never
// hide behind a skip.
package hostcheck

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// StrictEnv names the environment variable that turns missing requirements
// into failures.
const StrictEnv = "BERTH_STRICT_HOST"

// Requirement is one host prerequisite: a check and the advice to fix it.
type Requirement struct {
	Name    string
	Install string // how to get it, shown when it is missing
	check   func(Host) error
}

// Missing describes one requirement the host does not meet.
type Missing struct {
	Requirement Requirement
	Err         error
}

func (m Missing) String() string {
	return fmt.Sprintf("%s: %v (install: %s)", m.Requirement.Name, m.Err, m.Requirement.Install)
}

// Require checks reqs on the real host and stops the test if any is missing:
// t.Fatalf when BERTH_STRICT_HOST=1, t.Skipf otherwise.
func Require(t testing.TB, reqs ...Requirement) {
	t.Helper()
	require(t, OS(), reqs...)
}

// reporter is the part of testing.TB that require uses, so its decision can
// be tested without ending the calling test.
type reporter interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

func require(t reporter, h Host, reqs ...Requirement) {
	t.Helper()
	missing := Check(h, reqs...)
	if len(missing) == 0 {
		return
	}
	lines := make([]string, len(missing))
	for i, m := range missing {
		lines[i] = m.String()
	}
	msg := "host prerequisites missing:\n  " + strings.Join(lines, "\n  ")
	if h.Getenv(StrictEnv) == "1" {
		t.Fatalf("%s\n(%s=1: missing prerequisites fail instead of skipping)", msg, StrictEnv)
		return
	}
	t.Skipf("%s", msg)
}

// Check returns every requirement in reqs that h does not meet.
func Check(h Host, reqs ...Requirement) []Missing {
	var missing []Missing
	for _, r := range reqs {
		if err := r.check(h); err != nil {
			missing = append(missing, Missing{Requirement: r, Err: err})
		}
	}
	return missing
}

// RepoRoot returns the directory holding the module's go.mod, found by
// walking up from the working directory (tests run in their package dir).
func RepoRoot() (string, error) {
	return repoRoot(OS())
}

func repoRoot(h Host) (string, error) {
	dir, err := h.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repo root: %w", err)
	}
	for {
		if _, err := h.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find repo root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ToolsDir is where crictl and critest are installed: $BERTH_TOOLS_DIR, or
// _output/tools at the repo root (where hack/setup.sh puts them).
func ToolsDir() (string, error) {
	return toolsDir(OS())
}

func toolsDir(h Host) (string, error) {
	if d := h.Getenv("BERTH_TOOLS_DIR"); d != "" {
		return d, nil
	}
	root, err := repoRoot(h)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "_output", "tools"), nil
}

// CNIBinDir is where the CNI plugins are: $BERTH_CNI_BIN_DIR or /usr/lib/cni.
func CNIBinDir() string {
	return cniBinDir(OS())
}

func cniBinDir(h Host) string {
	if d := h.Getenv("BERTH_CNI_BIN_DIR"); d != "" {
		return d
	}
	return "/usr/lib/cni"
}

// RuncPath returns the runc binary the host has: on PATH, else /usr/sbin/runc.
func RuncPath() (string, error) {
	return runcPath(OS())
}

func runcPath(h Host) (string, error) {
	if p, err := h.LookPath("runc"); err == nil {
		return p, nil
	}
	if err := isExecutable(h, "/usr/sbin/runc"); err != nil {
		return "", fmt.Errorf("runc not on PATH nor at /usr/sbin/runc")
	}
	return "/usr/sbin/runc", nil
}

// isExecutable reports whether a file exists, is regular and executable.
func isExecutable(h Host, path string) error {
	fi, err := h.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
