package images

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// The test images' helper programs are C, compiled static with gcc at build
// time: a Go binary cannot be small, and PID 1 of a sandbox must handle
// signals and reap zombies itself, which a busybox `sleep` (the kernel
// ignores default-action signals sent to PID 1) cannot do.
//
//go:embed csrc/*.c
var csrc embed.FS

// programs compiles the embedded C programs on first use, each once per
// programs value (a catalogue build), and only those the catalogue needs.
type programs struct {
	mu   sync.Mutex
	bins map[string][]byte
}

// get returns the static executable built from csrc/<name>.c.
func (p *programs) get(ctx context.Context, name string) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.bins[name]; ok {
		return b, nil
	}
	dir, err := os.MkdirTemp("", "berth-testkit-cprog-")
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", name, err)
	}
	defer os.RemoveAll(dir)
	b, err := compile(ctx, dir, name+".c")
	if err != nil {
		return nil, err
	}
	if p.bins == nil {
		p.bins = map[string][]byte{}
	}
	p.bins[name] = b
	return b, nil
}

// compile builds one source with gcc -static -Os, stripped, in dir under
// relative names so no temporary path ends up in the binary.
func compile(ctx context.Context, dir, src string) ([]byte, error) {
	data, err := csrc.ReadFile("csrc/" + src)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", src, err)
	}
	if err := os.WriteFile(filepath.Join(dir, src), data, 0o644); err != nil {
		return nil, fmt.Errorf("compile %s: %w", src, err)
	}
	out := src[:len(src)-len(".c")]
	cmd := exec.CommandContext(ctx, "gcc", "-static", "-Os", "-s", "-Wall", "-o", out, src)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("gcc -static %s (needs gcc and libc6-dev): %w: %s", src, err, stderr.String())
	}
	bin, err := os.ReadFile(filepath.Join(dir, out))
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", src, err)
	}
	return bin, nil
}
