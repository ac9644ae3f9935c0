package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
)

// profiler saves a server's pprof profiles (-profile-dir): berth's (it is
// started with --profiling) and kube-apiserver's (profiling is on by
// default there), both served at /debug/pprof/ to admins, so the two can
// be compared function by function; the peer's etcd is not profiled.
// Failures are logged, since a profile is an aid to the reader and never a
// figure of the report. A nil profiler saves nothing.
type profiler struct {
	client *http.Client
	host   string
	dir    string
	prefix string // shape and server, e.g. "large-berth-", "small-kube-apiserver-"
	log    *slog.Logger
}

// newProfiler profiles t into dir, or returns nil when dir is empty.
func newProfiler(t *target, dir, shape string, log *slog.Logger) *profiler {
	if dir == "" {
		return nil
	}
	client, err := rest.HTTPClientFor(t.config)
	if err != nil {
		log.Warn("profile: no client", "err", err)
		return nil
	}
	label := "berth"
	if t.name != "berth" {
		label = "kube-apiserver"
	}
	return &profiler{client: client, host: t.config.Host, dir: dir, prefix: shape + "-" + label + "-", log: log}
}

// createPhase saves a CPU profile and then an execution trace while pods
// are created, starting past the first creates' warm-up. The returned
// channel closes once both are written or ctx ends.
func (p *profiler) createPhase(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if p == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return
		}
		p.save(ctx, "cpu.pprof", "profile?seconds=5")
		p.save(ctx, "trace.out", "trace?seconds=2")
	}()
	return done
}

// heap saves the heap profile, to show what the loaded memory holds.
func (p *profiler) heap(ctx context.Context) {
	if p != nil {
		p.save(ctx, "heap.pprof", "heap")
	}
}

func (p *profiler) save(ctx context.Context, name, query string) {
	path := filepath.Join(p.dir, p.prefix+name)
	if err := p.fetchTo(ctx, p.host+"/debug/pprof/"+query, path); err != nil {
		p.log.Warn("profile: fetch failed", "what", name, "err", err)
		return
	}
	p.log.Info("profile saved", "path", path)
}

func (p *profiler) fetchTo(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
