package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestMain lets a test run this binary as the real command (signals and all).
func TestMain(m *testing.M) {
	if os.Getenv("TESTREGISTRY_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestServesLoopbackAndTestNetworks(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "198.18.0.1:0", "198.19.255.254:0"} {
		if _, err := parseFlags([]string{"--listen", listen}, io.Discard); err != nil {
			t.Errorf("--listen %s: %v", listen, err)
		}
	}
}

func TestRejectsBadFlagsAndNonLoopback(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:5000"},
		{"--listen", "10.0.0.1:5000"},
		{"--listen", "198.20.0.1:5000"}, // just past the test networks' 198.18.0.0/15
		{"--listen", "nonsense"},
		{"--bogus"},
		{"extra-arg"},
	} {
		ready := filepath.Join(t.TempDir(), "ready")
		err := run(t.Context(), slog.New(slog.DiscardHandler), append(args, "--ready-file", ready), io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%v: accepted", args)
		}
		if _, serr := os.Stat(ready); serr == nil {
			t.Errorf("%v: wrote the ready file despite %v", args, err)
		}
	}
}

// waitReady waits for the ready file and returns what it says.
func waitReady(t *testing.T, path string, done <-chan error) string {
	t.Helper()
	var b []byte
	wait.UntilNil(t, time.Minute, "testregistry to write its ready file", func() error {
		select {
		case err := <-done:
			t.Fatalf("testregistry ended before ready: %v", err)
		default:
		}
		var err error
		b, err = os.ReadFile(path)
		return err
	})
	return strings.TrimSpace(string(b))
}

func pullDigest(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	return desc.Digest.String()
}

// TestServesCritestImagesWithHostDropped starts the tool in-process with
// --critest on a random loopback port and pulls images back by their
// mirrored names; their digests must be the ones the kit builds.
func TestServesCritestImagesWithHostDropped(t *testing.T) {
	hostcheck.Require(t, hostcheck.BusyboxStatic, hostcheck.Gcc)
	tools, err := hostcheck.ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	bb, err := images.FetchDebianBusybox(t.Context(), filepath.Join(tools, "debian-busybox"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := images.CritestCatalogue(t.Context(), images.CritestOptions{DebianBusybox: bb})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := filepath.Join(t.TempDir(), "ready")
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, slog.New(slog.DiscardHandler),
			[]string{"--listen", "127.0.0.1:0", "--critest", "--debian-busybox", bb, "--ready-file", ready}, io.Discard, io.Discard)
	}()
	addr := waitReady(t, ready, done)

	for _, ref := range []string{images.CritestDefaultImage, "registry.k8s.io/pause:3.9", "gcr.io/k8s-staging-cri-tools/test-image-tags:2"} {
		d, _ := want[ref].Image.Digest()
		if got := pullDigest(t, addr+"/"+images.RepositoryPath(ref)); got != d.String() {
			t.Errorf("%s served as %s, want %s", ref, got, d)
		}
	}
	if got := pullDigest(t, addr+"/"+images.Busybox); !strings.HasPrefix(got, "sha256:") {
		t.Errorf("berth's own busybox not served: %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after cancel: %v", err)
	}
}

// TestStopsCleanlyOnSIGTERM runs the command as a process and signals it.
func TestStopsCleanlyOnSIGTERM(t *testing.T) {
	hostcheck.Require(t, hostcheck.BusyboxStatic, hostcheck.Gcc)
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(os.Args[0], "--listen", "127.0.0.1:0", "--ready-file", ready)
	cmd.Env = append(os.Environ(), "TESTREGISTRY_RUN_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	addr := waitReady(t, ready, done)
	pullDigest(t, addr+"/"+images.Pause)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"serving test registry", "images pushed", "shutting down"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestListPrintsEveryReferenceWithDigest(t *testing.T) {
	hostcheck.Require(t, hostcheck.BusyboxStatic, hostcheck.Gcc)
	want, err := images.Catalogue(t.Context(), images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ready := filepath.Join(t.TempDir(), "ready")
	if err := run(t.Context(), slog.New(slog.DiscardHandler), []string{"--list", "--ready-file", ready}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("--list printed %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for _, line := range lines {
		f := strings.SplitN(line, "\t", 3)
		a, ok := want[f[0]]
		if len(f) != 3 || !ok || f[2] != a.About {
			t.Errorf("unexpected line %q", line)
		}
	}
	if _, err := os.Stat(ready); err == nil {
		t.Error("--list served (wrote the ready file)")
	}
}

// TestConformanceNeedsAgnhost: without the agnhost build, --conformance
// fails before serving, saying how to make it.
func TestConformanceNeedsAgnhost(t *testing.T) {
	hostcheck.Require(t, hostcheck.Gcc, hostcheck.BusyboxStatic)
	ready := filepath.Join(t.TempDir(), "ready")
	missing := filepath.Join(t.TempDir(), "agnhost")
	err := run(t.Context(), slog.New(slog.DiscardHandler),
		[]string{"--listen", "127.0.0.1:0", "--conformance", "--agnhost", missing, "--ready-file", ready}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "hack/build-conformance.sh") {
		t.Errorf("--conformance without agnhost: %v, want an error naming hack/build-conformance.sh", err)
	}
	if _, serr := os.Stat(ready); serr == nil {
		t.Error("wrote the ready file without the conformance images")
	}
}
