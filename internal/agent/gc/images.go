package gc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageRecord is what the collector remembers of an image between passes:
// the runtime does not say when an image was last used, so, as the kubelet,
// the collector notes it each pass an image is in use.
type imageRecord struct {
	firstSeen, lastUsed time.Time // lastUsed zero: not used since the agent started
	size                uint64
}

// imageRecords maps image IDs to their records.
type imageRecords map[string]*imageRecord

// CollectImages makes one image pass: it notes which images are in use;
// then, if the image filesystem is at least HighPercent full, removes
// unused, unpinned images not seen for less than MinImageAge, least
// recently used first, until the bytes freed would bring usage down to
// LowPercent. Freeing too little records a FreeDiskSpaceFailed event on
// the Node and returns an error.
func (c *Collector) CollectImages(ctx context.Context) error {
	c.imagesMu.Lock()
	defer c.imagesMu.Unlock()
	now := c.cfg.Clock.Now()
	images, err := c.detectImages(ctx, now)
	if err != nil {
		return err
	}
	fs, err := c.cfg.Usage.ImageFs(ctx)
	if err != nil {
		return fmt.Errorf("image filesystem usage: %w", err)
	}
	if fs.CapacityBytes == 0 {
		return errors.New("image filesystem reports a capacity of 0")
	}
	available := min(fs.AvailableBytes, fs.CapacityBytes)
	usedPercent := 100 - int(available*100/fs.CapacityBytes)
	if usedPercent < c.cfg.Policy.HighPercent {
		return nil
	}
	target := fs.CapacityBytes * uint64(100-c.cfg.Policy.LowPercent) / 100
	if target <= available {
		return nil
	}
	toFree := target - available
	c.log.Info("image filesystem over the high threshold; removing unused images", "usedPercent", usedPercent,
		"highPercent", c.cfg.Policy.HighPercent, "lowPercent", c.cfg.Policy.LowPercent, "bytesToFree", toFree)
	freed, err := c.freeImages(ctx, c.evictionOrder(images, now), toFree)
	if err != nil {
		return err
	}
	if freed < toFree {
		msg := fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %d bytes used). "+
			"Failed to free sufficient space by deleting unused images (freed %d bytes, %d needed). "+
			"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
			usedPercent, fs.CapacityBytes, freed, toFree)
		c.nodeEvent(corev1.EventTypeWarning, ReasonFreeDiskSpaceFailed, msg)
		return errors.New(msg)
	}
	return nil
}

// candidate is an image that may be removed.
type candidate struct {
	id string
	imageRecord
}

// detectImages lists the runtime's images, updates their records and
// returns the images that may be removed: not used by any container (of
// any state: a dead container still needs its image), not pinned.
func (c *Collector) detectImages(ctx context.Context, now time.Time) ([]candidate, error) {
	resp, err := c.cfg.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("CRI ListImages: %w", err)
	}
	containers, err := c.listContainers(ctx)
	if err != nil {
		return nil, err
	}
	inUse, err := c.imagesInUse(ctx, containers)
	if err != nil {
		return nil, err
	}
	pinned := map[string]bool{}
	for _, p := range c.cfg.Policy.PinnedImages {
		pinned[p] = true
	}
	seen := map[string]bool{}
	var out []candidate
	for _, img := range resp.GetImages() {
		seen[img.Id] = true
		rec := c.images[img.Id]
		if rec == nil {
			rec = &imageRecord{firstSeen: now}
			c.images[img.Id] = rec
		}
		rec.size = img.Size
		names := append([]string{img.Id}, append(img.RepoTags, img.RepoDigests...)...)
		if slices.ContainsFunc(names, func(n string) bool { return inUse[n] }) {
			rec.lastUsed = now
			continue
		}
		if img.Pinned || slices.ContainsFunc(names, func(n string) bool { return pinned[n] }) {
			continue
		}
		out = append(out, candidate{id: img.Id, imageRecord: *rec})
	}
	for id := range c.images {
		if !seen[id] {
			delete(c.images, id) // removed by someone else
		}
	}
	return out, nil
}

// evictionOrder drops images too new to judge and sorts the rest least
// recently used first (never used before first seen), ties by ID so the
// order is stable.
func (c *Collector) evictionOrder(images []candidate, now time.Time) []candidate {
	images = slices.DeleteFunc(images, func(img candidate) bool {
		return now.Sub(img.firstSeen) < c.cfg.Policy.MinImageAge
	})
	slices.SortFunc(images, func(a, b candidate) int {
		if c := a.lastUsed.Compare(b.lastUsed); c != 0 {
			return c
		}
		if c := a.firstSeen.Compare(b.firstSeen); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return images
}

// freeImages removes images in order until toFree bytes are freed. An
// image the runtime refuses to remove is skipped (and reported in the
// returned error only if nothing else frees enough).
func (c *Collector) freeImages(ctx context.Context, order []candidate, toFree uint64) (uint64, error) {
	var freed uint64
	var errs []error
	for _, img := range order {
		if freed >= toFree {
			break
		}
		if _, err := c.cfg.Images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: img.id}}); err != nil {
			errs = append(errs, fmt.Errorf("remove image %s: %w", img.id, err))
			continue
		}
		delete(c.images, img.id)
		freed += img.size
		c.cfg.Metrics.removed("image")
		c.log.Info("removed unused image", "id", img.id, "bytes", img.size, "lastUsed", img.lastUsed)
	}
	if freed < toFree && len(errs) > 0 {
		return freed, errors.Join(errs...)
	}
	return freed, nil
}

// imagesInUse holds every way a container names its image, and the images
// its image volumes mount, which only its status shows (as the kubelet's
// image GC reads them).
func (c *Collector) imagesInUse(ctx context.Context, containers []*runtimeapi.Container) (map[string]bool, error) {
	inUse := map[string]bool{}
	mark := func(names ...string) {
		for _, name := range names {
			if name != "" {
				inUse[name] = true
			}
		}
	}
	for _, ctr := range containers {
		mark(ctr.GetImage().GetImage(), ctr.ImageRef, ctr.ImageId)
		resp, err := c.cfg.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.Id})
		if status.Code(err) == codes.NotFound {
			continue // removed meanwhile, and its volumes with it
		}
		if err != nil {
			return nil, fmt.Errorf("CRI ContainerStatus %s: %w", ctr.Id, err)
		}
		for _, m := range resp.GetStatus().GetMounts() {
			if img := m.GetImage(); img != nil {
				mark(img.GetImage(), img.GetImageRef(), img.GetUserSpecifiedImage())
			}
		}
	}
	return inUse, nil
}
