package sibling

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindPrefersTheOneBesideTheExecutable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary is itself beside nothing else: write a companion
	// next to it and another on PATH.
	near := filepath.Join(filepath.Dir(self), "berth-sibling-test")
	if err := os.WriteFile(near, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(near) })
	onPath := t.TempDir()
	if err := os.WriteFile(filepath.Join(onPath, "berth-sibling-test"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onPath)
	got, err := Find("berth-sibling-test")
	if err != nil || got != near {
		t.Fatalf("Find = %q, %v; want %q", got, err, near)
	}
	os.Remove(near)
	got, err = Find("berth-sibling-test")
	if err != nil || got != filepath.Join(onPath, "berth-sibling-test") {
		t.Fatalf("Find without the one beside = %q, %v; want the one on PATH", got, err)
	}
}

func TestFindNamesWhatIsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Find("berth-no-such-companion")
	if err == nil || !strings.Contains(err.Error(), "berth-no-such-companion") {
		t.Fatalf("Find of a missing executable: %v", err)
	}
}
