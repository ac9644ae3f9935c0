package image

import (
	"context"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func (s *Service) importDockerArchive(ctx context.Context, archive string) ([]string, error) {
	opener := func() (io.ReadCloser, error) { return os.Open(archive) }
	manifest, err := tarball.LoadManifest(opener)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "import: neither an OCI layout nor a docker-save archive: %v", err)
	}
	var ids []string
	for i, desc := range manifest {
		tags := desc.RepoTags
		if len(tags) == 0 {
			tags = []string{""}
		}
		for _, repoTag := range tags {
			img, names, err := dockerArchiveImage(opener, manifest, i, repoTag)
			if err != nil {
				return ids, err
			}
			id, err := s.store(ctx, img, names, nil, &pullProgress{})
			if err != nil {
				return ids, err
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func dockerArchiveImage(opener tarball.Opener, manifest tarball.Manifest, i int, repoTag string) (v1.Image, storeNames, error) {
	if repoTag == "" {
		if len(manifest) != 1 {
			return nil, storeNames{}, status.Errorf(codes.InvalidArgument, "import: image %d of the archive has no tag", i)
		}
		img, err := tarball.Image(opener, nil)
		return img, storeNames{}, wrapImportErr(err)
	}
	names := storeNames{}
	var err error
	if names.ref, err = parseRef(repoTag); err != nil {
		return nil, names, err
	}
	tag, err := name.NewTag(repoTag)
	if err != nil {
		return nil, names, status.Errorf(codes.InvalidArgument, "import: tag %q: %v", repoTag, err)
	}
	img, err := tarball.Image(opener, &tag)
	if err != nil {
		return nil, names, wrapImportErr(err)
	}
	// The manifest is rebuilt from the archive; its digest is what the
	// store holds, so it is the repo digest.
	d, err := partial.Digest(img)
	if err != nil {
		return nil, names, wrapImportErr(err)
	}
	names.repoDigest = repoDigest(names.ref.Repository(), d.String())
	return img, names, nil
}

func wrapImportErr(err error) error {
	if err == nil {
		return nil
	}
	return status.Errorf(codes.InvalidArgument, "import: %v", err)
}
