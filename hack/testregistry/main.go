// Command testregistry serves berth's test images from an in-memory OCI
// registry on a loopback address, for clients outside the Go tests (crictl,
// critest, a berth runtime started by hand):
//
//	go run ./hack/testregistry --listen 127.0.0.1:5000 [--critest] [--conformance] [--ready-file F]
//
// Images are built offline by internal/testkit/images and served under their
// repository path with any registry host dropped, so
// registry.k8s.io/e2e-test-images/busybox:1.29-2 is
// 127.0.0.1:5000/e2e-test-images/busybox:1.29-2 and a runtime started with
// --registry-mirror registry.k8s.io=http://127.0.0.1:5000 resolves it.
// --conformance adds the images the Kubernetes conformance suite pulls
// (agnhost from the static build hack/build-conformance.sh makes, busybox
// and agnhost with upstream busybox's ash as /bin/sh, hack/build-busybox-ash.sh).
// Once every image is pushed, the address is written to --ready-file. It
// stops cleanly on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/registry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, logger, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "testregistry: %v\n", err)
		os.Exit(2)
	}
}

type config struct {
	listen        string
	critest       bool
	conformance   bool
	agnhost       string
	hostTools     []string
	readyFile     string
	busybox       string
	busyboxSh     string
	debianBusybox string
	list          bool
}

func parseFlags(args []string, output io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("testregistry", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:5000", "host:port to serve on, a loopback address or one of a test network in 198.18.0.0/15 (port 0 picks one; see --ready-file)")
	fs.BoolVar(&c.critest, "critest", false, "also serve the images critest v1.37.0 pulls, under their upstream repository paths")
	fs.BoolVar(&c.conformance, "conformance", false, "also serve the images the Kubernetes v1.37.2 conformance tests pull, under their upstream names")
	fs.StringVar(&c.agnhost, "agnhost", "", "static agnhost for --conformance (default: <tools dir>/../conformance/agnhost, from hack/build-conformance.sh)")
	fs.Func("agnhost-tool", "host executable put into the agnhost images with its shared libraries (repeatable; default /usr/bin/curl, /bin/bash, /usr/bin/nc.openbsd, /usr/bin/dig and /usr/bin/getent)", func(v string) error {
		c.hostTools = append(c.hostTools, v)
		return nil
	})
	fs.StringVar(&c.readyFile, "ready-file", "", "write the serving address here once every image is pushed")
	fs.StringVar(&c.busybox, "busybox", "/bin/busybox", "static busybox for berth's own test images")
	fs.StringVar(&c.busyboxSh, "busybox-sh", "", "static ash for --conformance, the busybox and agnhost images' /bin/sh (default: <tools dir>/busybox-ash, from hack/build-busybox-ash.sh)")
	fs.StringVar(&c.debianBusybox, "debian-busybox", "", "Debian's dynamic busybox for the critest images (default: fetched with apt-get into <tools dir>/debian-busybox)")
	fs.BoolVar(&c.list, "list", false, "print each reference, its digest and what it is for, then exit without serving")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	host, _, err := net.SplitHostPort(c.listen)
	if err != nil {
		return c, fmt.Errorf("--listen %q: %w", c.listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback() && !testNetwork.Contains(ip)) {
		return c, fmt.Errorf("--listen %q: only loopback addresses and test networks (%s) are served", c.listen, testNetwork)
	}
	return c, nil
}

// testNetwork is the range reserved for benchmark networks (RFC 2544), never
// routed anywhere: hack/conformance.sh's nodes share a bridge in it, and
// the nodes in their network namespaces pull from the registry there.
var testNetwork = &net.IPNet{IP: net.IPv4(198, 18, 0, 0), Mask: net.CIDRMask(15, 32)}

// run builds the images, serves them until ctx ends and then shuts down.
func run(ctx context.Context, logger *slog.Logger, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	set, err := buildImages(ctx, logger, c)
	if err != nil {
		return err
	}
	if c.list {
		return list(stdout, set)
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := ln.Addr().String()
	srv := &http.Server{
		Handler:           ggcrregistry.New(ggcrregistry.Logger(slog.NewLogLogger(logger.Handler(), slog.LevelDebug))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("serving test registry", "address", addr)

	if err := registry.PushContext(ctx, addr, set); err != nil {
		_ = srv.Close()
		return err
	}
	logger.Info("images pushed", "count", len(set), "critest", c.critest, "conformance", c.conformance)
	if c.readyFile != "" {
		if err := writeAtomically(c.readyFile, []byte(addr+"\n")); err != nil {
			_ = srv.Close()
			return fmt.Errorf("ready file: %w", err)
		}
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	// Shutdown waits for requests in flight, but a connection a client
	// opened and never used (net/http dials spare ones) only counts as idle
	// after 5s; past a short grace period such connections are just closed.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shutdown: %w", err)
		}
		logger.Warn("closing connections still open after the grace period")
		if err := srv.Close(); err != nil {
			return fmt.Errorf("close: %w", err)
		}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

func buildImages(ctx context.Context, logger *slog.Logger, c config) (images.Set, error) {
	set, err := images.Catalogue(ctx, images.Options{Busybox: c.busybox})
	if err != nil {
		return nil, err
	}
	if c.conformance {
		conf, err := conformanceImages(ctx, c)
		if err != nil {
			return nil, err
		}
		for ref, a := range conf {
			set[ref] = a
		}
	}
	if !c.critest {
		return set, nil
	}
	bb := c.debianBusybox
	if bb == "" {
		tools, err := hostcheck.ToolsDir()
		if err != nil {
			return nil, err
		}
		if bb, err = images.FetchDebianBusybox(ctx, filepath.Join(tools, "debian-busybox")); err != nil {
			return nil, err
		}
		logger.Info("using Debian's dynamic busybox", "path", bb)
	}
	critest, err := images.CritestCatalogue(ctx, images.CritestOptions{DebianBusybox: bb})
	if err != nil {
		return nil, err
	}
	for ref, a := range critest {
		set[ref] = a
	}
	return set, nil
}

// conformanceImages builds the conformance suite's images from the static
// agnhost build and the k8s.io/kubernetes module source in the module cache.
func conformanceImages(ctx context.Context, c config) (images.Set, error) {
	agnhost := c.agnhost
	if agnhost == "" {
		tools, err := hostcheck.ToolsDir()
		if err != nil {
			return nil, err
		}
		agnhost = filepath.Join(filepath.Dir(tools), "conformance", "agnhost")
	}
	if _, err := os.Stat(agnhost); err != nil {
		return nil, fmt.Errorf("--conformance: agnhost %s: %w (run hack/build-conformance.sh)", agnhost, err)
	}
	shell := c.busyboxSh
	if shell == "" {
		var err error
		if shell, err = hostcheck.BusyboxAshPath(); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(shell); err != nil {
		return nil, fmt.Errorf("--conformance: shell %s: %w (run hack/setup.sh, which builds it with hack/build-busybox-ash.sh)", shell, err)
	}
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		return nil, fmt.Errorf("--conformance: go list -m k8s.io/kubernetes: %w", err)
	}
	tools := c.hostTools
	if tools == nil {
		tools = []string{"/usr/bin/curl", "/bin/bash", "/usr/bin/nc.openbsd", "/usr/bin/dig", "/usr/bin/getent"}
	}
	return images.ConformanceCatalogue(ctx, images.ConformanceOptions{
		Busybox:       c.busybox,
		Shell:         shell,
		Agnhost:       agnhost,
		KubernetesDir: strings.TrimSpace(string(out)),
		HostTools:     tools,
	})
}

// writeAtomically makes path appear complete or not at all, so a waiter
// polling for it never reads a partial address.
func writeAtomically(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// list prints one line per reference: name, digest, description.
func list(w io.Writer, set images.Set) error {
	for _, ref := range set.Names() {
		a := set[ref]
		var d v1.Hash
		var err error
		if a.Index != nil {
			d, err = a.Index.Digest()
		} else {
			d, err = a.Image.Digest()
		}
		if err != nil {
			return fmt.Errorf("%s: digest: %w", ref, err)
		}
		if _, err := fmt.Fprintf(w, "%s\t%s\t%s\n", ref, d, a.About); err != nil {
			return err
		}
	}
	return nil
}
