package image

import (
	"context"
	"os"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPullsAndRemovalsOfImagesSharingLayers races pulls of two images that
// share a base layer against removals of each, and checks that every image
// the store ends up recording still has all its layers and blobs: a removal's
// garbage collection must never take content a concurrent pull relies on.
func TestPullsAndRemovalsOfImagesSharingLayers(t *testing.T) {
	reg := startRegistry(t, nil)
	base := layer(t, dir("bin"), file("bin/sh", "shared base"))
	refs := []string{reg.host + "/race/a:1", reg.host + "/race/b:1"}
	reg.push(t, "race/a:1", testImage(t, "", base, layer(t, file("a", "a"))))
	reg.push(t, "race/b:1", testImage(t, "", base, layer(t, file("b", "b"))))
	s := newTestService(t, t.TempDir(), nil)
	ctx := context.Background()

	const rounds = 15
	var wg sync.WaitGroup
	errs := make(chan error, 4*rounds)
	for _, ref := range refs {
		wg.Go(func() {
			for range rounds {
				if _, err := s.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			for range rounds {
				if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent pull/remove: %v", err)
	}
	// Whatever is recorded now must be complete.
	for _, ref := range refs {
		pull(t, s, ref)
	}
	s.meta.view(func(md *metadata) {
		for _, rec := range md.Images {
			for _, c := range rec.ChainIDs {
				if _, err := os.Stat(s.layers.path(c)); err != nil {
					t.Errorf("image %s lost its layer %s: %v", rec.ID, c, err)
				}
			}
			for _, b := range rec.Blobs {
				if !s.blobs.Has(mustHash(t, b)) {
					t.Errorf("image %s lost its blob %s", rec.ID, b)
				}
			}
		}
	})
}
