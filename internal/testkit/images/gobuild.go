package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
)

// The aggregator conformance test's two servers are Go main packages that
// berth's own module graph already pins, so they are built in berth's module
// (as hack/build-conformance.sh builds agnhost): no module to resolve, and
// they share berth's build cache (no -trimpath, which would key every package
// apart), so warm each is a link of seconds.
//   - k8s.io/sample-apiserver: the e2e suite that hack/conformance/e2e builds
//     imports its API types, so go.mod maps it to the staging release berth
//     uses (v0.37.2) and go.sum keeps it; its root package is its main.
//   - go.etcd.io/etcd/server/v3: berth requires it; its root package is
//     etcd's main (etcdmain.Main(os.Args)).
const (
	sampleAPIServerPackage = "k8s.io/sample-apiserver"
	etcdPackage            = "go.etcd.io/etcd/server/v3"
)

// goProgram returns the static executable at prebuilt or, when prebuilt is
// empty, builds pkg (goBuild). Either way it must be static: it runs on a
// busybox-static base without a C library.
func goProgram(ctx context.Context, prebuilt, pkg string) ([]byte, error) {
	var bin []byte
	var err error
	from := prebuilt
	if prebuilt == "" {
		from = "its build"
		bin, err = goBuild(ctx, pkg)
	} else {
		bin, err = os.ReadFile(prebuilt)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	if err := requireStatic(bin); err != nil {
		return nil, fmt.Errorf("%s: %s: %w (build it with CGO_ENABLED=0)", pkg, from, err)
	}
	return bin, nil
}

// goBuild builds the main package pkg static (CGO_ENABLED=0) and stripped,
// at the version berth's go.mod resolves. The go command runs in the working
// directory, which must be inside berth's module: hack/testregistry runs
// from the repository root, a test from its package's directory.
func goBuild(ctx context.Context, pkg string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "berth-testkit-gobuild-")
	if err != nil {
		return nil, fmt.Errorf("go build: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, path.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build (run inside berth's module): %w: %s", err, stderr.String())
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("go build: %w", err)
	}
	return bin, nil
}
