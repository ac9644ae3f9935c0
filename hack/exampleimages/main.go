// Command exampleimages writes the images the quick start runs offline into
// one docker-save archive, for `berth image import`:
//
//	go run ./hack/exampleimages --out _output/images/examples.tar
//
// They are built from the host's busybox-static and a static C pause by
// internal/testkit/images (the same reproducible builders the tests use),
// under local names no registry serves, so nothing is ever pulled for them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/berth/berth/internal/testkit/images"
)

// The quick start's image names (examples/hello.yaml and hack/run.sh use them).
var examples = map[string]string{
	"localhost/berth/pause:1": images.Pause,
	"localhost/berth/hello:1": images.Httpd,
}

func main() {
	out := flag.String("out", "_output/images/examples.tar", "archive to write")
	flag.Parse()
	if err := run(context.Background(), *out); err != nil {
		fmt.Fprintf(os.Stderr, "exampleimages: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string) error {
	set, err := images.Catalogue(ctx, images.Options{})
	if err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for ref, source := range examples {
		tag, err := name.NewTag(ref)
		if err != nil {
			return err
		}
		refs[tag] = set[source].Image
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return os.Rename(tmp, out)
}
