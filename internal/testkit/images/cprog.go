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

// programs compiles the embedded C programs once per Programs value.
type programs struct {
	once sync.Once
	bins map[string][]byte
	err  error
}

// get returns the static executable built from csrc/<name>.c.
func (p *programs) get(ctx context.Context, name string) ([]byte, error) {
	p.once.Do(func() { p.bins, p.err = compileAll(ctx) })
	if p.err != nil {
		return nil, p.err
	}
	b, ok := p.bins[name]
	if !ok {
		return nil, fmt.Errorf("no C program %q", name)
	}
	return b, nil
}

func compileAll(ctx context.Context) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "berth-testkit-cprog-")
	if err != nil {
		return nil, fmt.Errorf("compile C programs: %w", err)
	}
	defer os.RemoveAll(dir)
	srcs, err := csrc.ReadDir("csrc")
	if err != nil {
		return nil, fmt.Errorf("compile C programs: %w", err)
	}
	bins := make(map[string][]byte, len(srcs))
	for _, s := range srcs {
		name := s.Name()[:len(s.Name())-len(".c")]
		bin, err := compile(ctx, dir, s.Name())
		if err != nil {
			return nil, err
		}
		bins[name] = bin
	}
	return bins, nil
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
