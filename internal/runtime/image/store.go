package image

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// layerJobs bounds how many layers are fetched and unpacked at once.
const layerJobs = 3

// namedBlob is a blob to keep alongside an image (e.g. the index it came from).
type namedBlob struct {
	digest v1.Hash
	data   []byte
}

// storeNames are the names an image is recorded under.
type storeNames struct {
	ref        parsedRef
	repoDigest string // "repo@digest"; empty if none
}

// store writes img's blobs, unpacks its layers and records it under names.
// It returns the image ID (the config digest).
// progress counts the bytes and layers it fetches.
func (s *Service) store(ctx context.Context, img v1.Image, names storeNames, extra []namedBlob, progress *pullProgress) (string, error) {
	start := time.Now()
	rec, err := s.describe(img)
	if err != nil {
		return "", err
	}
	// Keep a concurrent removal's garbage collection off this image's
	// content until the image is recorded.
	unpin := s.pins.pin(append(append(slices.Clone(rec.ChainIDs), rec.Blobs...), extraDigests(extra)...))
	defer unpin()

	layers, err := img.Layers()
	if err != nil {
		return "", fmt.Errorf("layers: %w", err)
	}
	progress.layers.Store(int64(len(layers)))
	var fetched atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(layerJobs)
	for i, layer := range layers {
		g.Go(func() error {
			n, err := s.storeLayer(gctx, layer, rec.ChainIDs[i], rec.DiffIDs[i], progress)
			if n > 0 {
				fetched.Add(1)
			}
			if err == nil {
				progress.layersDone.Add(1)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	if err := s.storeSmallBlobs(img, extra); err != nil {
		return "", err
	}
	rec.RepoTags = nil
	if names.ref.tagged != nil {
		rec.RepoTags = []string{names.ref.String()}
	}
	if names.repoDigest != "" {
		rec.RepoDigests = []string{names.repoDigest}
	}
	rec.Blobs = append(rec.Blobs, extraDigests(extra)...)
	s.mu.Lock()
	err = s.meta.update(func(md *metadata) error {
		md.addImage(rec, names.ref)
		return nil
	})
	s.mu.Unlock()
	if err != nil {
		return "", status.Errorf(codes.Internal, "record image: %v", err)
	}
	s.metrics.bytes.Add(float64(progress.bytes.Load()))
	s.metrics.layers.Add(float64(fetched.Load()))
	s.log.InfoContext(ctx, "image stored", "image", names.ref.String(), "id", rec.ID,
		"layers", len(layers), "layersFetched", fetched.Load(), "bytes", progress.bytes.Load(), "duration", time.Since(start))
	return rec.ID, nil
}

// describe builds the image's record from its manifest and config.
func (s *Service) describe(img v1.Image) (*imageRecord, error) {
	id, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("config digest: %w", err)
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("manifest digest: %w", err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(cfg.RootFS.DiffIDs) != len(manifest.Layers) {
		return nil, fmt.Errorf("config lists %d layers, manifest %d", len(cfg.RootFS.DiffIDs), len(manifest.Layers))
	}
	rawManifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	rec := &imageRecord{
		ID:             id.String(),
		ManifestDigest: manifestDigest.String(),
		ChainIDs:       chainIDs(cfg.RootFS.DiffIDs),
		Blobs:          []string{manifestDigest.String(), id.String()},
		Size:           uint64(len(rawManifest)) + uint64(manifest.Config.Size),
	}
	for i, d := range cfg.RootFS.DiffIDs {
		rec.DiffIDs = append(rec.DiffIDs, d.String())
		rec.Blobs = append(rec.Blobs, manifest.Layers[i].Digest.String())
		rec.Size += uint64(manifest.Layers[i].Size)
	}
	return rec, nil
}

// storeLayer downloads the compressed layer unless present and unpacks it
// unless its snapshot exists. It returns the bytes downloaded.
func (s *Service) storeLayer(ctx context.Context, layer v1.Layer, chainID, diffID string, progress *pullProgress) (int64, error) {
	digest, err := layer.Digest()
	if err != nil {
		return 0, fmt.Errorf("layer digest: %w", err)
	}
	var n int64
	if !s.blobs.Has(digest) {
		rc, err := layer.Compressed()
		if err != nil {
			return 0, fmt.Errorf("fetch layer %s: %w", digest, err)
		}
		n, err = s.blobs.Write(digest, countingReader{r: &ctxReader{ctx: ctx, r: rc}, n: &progress.bytes})
		rc.Close()
		if err != nil {
			return n, fmt.Errorf("fetch layer %s: %w", digest, err)
		}
		s.log.DebugContext(ctx, "layer fetched", "digest", digest.String(), "bytes", n)
	}
	_, err = s.layers.ensure(ctx, chainID, diffID, func() (io.ReadCloser, error) {
		rc, err := s.blobs.OpenUncompressed(digest)
		if err != nil {
			return nil, err
		}
		return readCloser{Reader: countingReader{r: rc, n: &progress.unpacked}, close: rc.Close}, nil
	})
	return n, err
}

func (s *Service) storeSmallBlobs(img v1.Image, extra []namedBlob) error {
	rawManifest, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("manifest digest: %w", err)
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("config digest: %w", err)
	}
	blobs := append([]namedBlob{{manifestDigest, rawManifest}, {configDigest, rawConfig}}, extra...)
	for _, b := range blobs {
		if err := s.blobs.WriteBytes(b.digest, b.data); err != nil {
			return err
		}
	}
	return nil
}

func extraDigests(extra []namedBlob) []string {
	out := make([]string, 0, len(extra))
	for _, b := range extra {
		out = append(out, b.digest.String())
	}
	return out
}
