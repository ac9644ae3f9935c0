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

// profileDuring saves a CPU profile and then an execution trace of berth
// while the create phase runs (-profile-dir; berth is started with
// --profiling, which serves /debug/pprof/ to admins). It returns once both
// are written or ctx ends; errors are logged, since a profile is an aid to
// the reader and never a figure of the report.
func profileDuring(ctx context.Context, cfg *rest.Config, dir, shape string, log *slog.Logger) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		log.Warn("profile: no client", "err", err)
		return
	}
	select {
	case <-time.After(2 * time.Second): // past the first creates' warm-up
	case <-ctx.Done():
		return
	}
	for _, p := range []struct{ name, query string }{
		{"cpu.pprof", "profile?seconds=5"},
		{"trace.out", "trace?seconds=2"},
	} {
		path := filepath.Join(dir, shape+"-berth-"+p.name)
		if err := fetchTo(ctx, client, cfg.Host+"/debug/pprof/"+p.query, path); err != nil {
			log.Warn("profile: fetch failed", "what", p.name, "err", err)
			continue
		}
		log.Info("profile saved", "path", path)
	}
}

// saveHeapProfile saves berth's heap profile (-profile-dir) as the
// loaded RSS is read, to show what the memory holds.
func saveHeapProfile(ctx context.Context, cfg *rest.Config, dir, shape string, log *slog.Logger) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		log.Warn("profile: no client", "err", err)
		return
	}
	path := filepath.Join(dir, shape+"-berth-heap.pprof")
	if err := fetchTo(ctx, client, cfg.Host+"/debug/pprof/heap", path); err != nil {
		log.Warn("profile: fetch failed", "what", "heap", "err", err)
		return
	}
	log.Info("profile saved", "path", path)
}

func fetchTo(ctx context.Context, client *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
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
