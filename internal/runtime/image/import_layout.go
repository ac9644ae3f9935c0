package image

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Annotations naming an image in an OCI layout's index.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

func (s *Service) importLayout(ctx context.Context, dir string) ([]string, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "import: OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "import: OCI layout index: %v", err)
	}
	var ids []string
	for _, desc := range im.Manifests {
		img, err := layoutImage(idx, desc)
		if err != nil {
			return ids, status.Errorf(codes.InvalidArgument, "import: %s: %v", desc.Digest, err)
		}
		names := storeNames{}
		if ref := desc.Annotations[annotationContainerdName]; ref != "" {
			if names.ref, err = parseRef(ref); err != nil {
				return ids, err
			}
		} else if ref := desc.Annotations[annotationRefName]; ref != "" {
			// A bare tag ("1.0") names nothing we could pull; only full refs count.
			if parsed, err := parseRef(ref); err == nil && ref != parsed.tagged.Tag() {
				names.ref = parsed
			}
		}
		if names.ref.named != nil {
			names.repoDigest = repoDigest(names.ref.Repository(), desc.Digest.String())
		}
		id, err := s.store(ctx, img, names, nil, &pullProgress{})
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// layoutImage returns the image desc names, choosing this platform's
// manifest when desc is an index.
func layoutImage(idx v1.ImageIndex, desc v1.Descriptor) (v1.Image, error) {
	if !desc.MediaType.IsIndex() {
		return idx.Image(desc.Digest)
	}
	child, err := idx.ImageIndex(desc.Digest)
	if err != nil {
		return nil, err
	}
	cm, err := child.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, m := range cm.Manifests {
		if m.Platform == nil || m.Platform.Satisfies(pullPlatform) {
			return child.Image(m.Digest)
		}
	}
	return nil, fmt.Errorf("no manifest for %s", pullPlatform.String())
}
