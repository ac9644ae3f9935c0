package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewCleansUpAfterACrash: leftovers of a crash mid-pull or mid-removal
// (temp blobs, half-unpacked layers, content no image refers to) are
// removed when the store is opened again, and the recorded images are intact.
func TestNewCleansUpAfterACrash(t *testing.T) {
	reg := startRegistry(t, nil)
	reg.push(t, "test/crash:1", simpleImage(t, "crash"))
	root := t.TempDir()
	ref := reg.host + "/test/crash:1"
	id := pull(t, newTestService(t, root, nil), ref)

	orphanBlob := filepath.Join(root, "blobs", "sha256", strings.Repeat("ab", 32))
	leftovers := []string{
		filepath.Join(root, "blobs", "sha256", ".tmp-123"),
		filepath.Join(root, "snapshots", ".tmp-456", "fs", "half"),
		filepath.Join(root, "snapshots", strings.Repeat("cd", 32), "fs", "orphan"),
		orphanBlob,
	}
	for _, p := range leftovers {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	s := newTestService(t, root, nil)
	for _, p := range leftovers {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s survived reopening: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "snapshots", strings.Repeat("cd", 32))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan snapshot dir survived: %v", err)
	}
	info, err := s.Resolve(context.Background(), ref)
	if err != nil || info.ID != id {
		t.Fatalf("image after reopening: %+v %v", info, err)
	}
	assertSnapshotHas(t, s, id, "etc/marker", "crash")
}

func TestNewRefusesCorruptMetadata(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "metadata.json"), []byte(`{"images": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Config{Root: root}); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("New on a corrupt index: %v, want an error saying so", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no root":            {},
		"mirror with a path": {Root: t.TempDir(), Mirrors: map[string][]string{"docker.io": {"http://127.0.0.1:5000/v2/x"}}},
		"mirror scheme":      {Root: t.TempDir(), Mirrors: map[string][]string{"docker.io": {"ftp://127.0.0.1:5000"}}},
		"empty mirror host":  {Root: t.TempDir(), Mirrors: map[string][]string{"": {"http://127.0.0.1:5000"}}},
		"bad insecure host":  {Root: t.TempDir(), Insecure: []string{"not a host"}},
	} {
		if cfg.Root != "" {
			cfg.Root = filepath.Join(cfg.Root, "store")
		}
		if _, err := New(context.Background(), cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
		if _, err := os.Stat(cfg.Root); cfg.Root != "" && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: rejected config still created %s", name, cfg.Root)
		}
	}
	if _, err := New(context.Background(), Config{Root: filepath.Join(t.TempDir(), "a:b")}); err == nil {
		t.Error("New accepted a root with ':' (it would break overlay mount options)")
	}
}
