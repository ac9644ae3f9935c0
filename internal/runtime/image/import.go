package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Annotations naming an image in an OCI layout's index.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// Import loads every image of an OCI image layout or a docker-save archive,
// given as a tar stream, into the store under the names the archive gives
// them. It returns the IDs of the images imported.
func (s *Service) Import(ctx context.Context, r io.Reader) ([]string, error) {
	tmpDir, err := os.MkdirTemp(s.cfg.Root, ".import-")
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	archive := filepath.Join(tmpDir, "archive.tar")
	f, err := os.Create(archive)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	_, err = io.Copy(f, &ctxReader{ctx: ctx, r: r})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("import: read archive: %w", err)
	}
	isLayout, err := archiveHas(archive, "oci-layout")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "import: not a tar archive: %v", err)
	}
	if isLayout {
		dir := filepath.Join(tmpDir, "layout")
		if err := extractPlain(archive, dir); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "import: %v", err)
		}
		return s.importLayout(ctx, dir)
	}
	return s.importDockerArchive(ctx, archive)
}

// archiveHas reports whether the tar file has an entry called name.
func archiveHas(archive, entryName string) (bool, error) {
	f, err := os.Open(archive)
	if err != nil {
		return false, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if rel, err := cleanRel(hdr.Name); err == nil && rel == entryName {
			return true, nil
		}
	}
}

// extractPlain unpacks the directories and regular files of an OCI layout
// archive, refusing paths that leave dir; links have no place in a layout.
func extractPlain(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	u := &unpacker{root: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		rel, err := cleanRel(hdr.Name)
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if _, err := u.ensureDir(rel); err != nil {
				return err
			}
		case tar.TypeReg:
			parent, err := u.ensureDir(filepath.Dir(rel))
			if err != nil {
				return err
			}
			target := filepath.Join(parent, filepath.Base(rel))
			if _, err := u.clearTarget(target, false); err != nil {
				return err
			}
			if err := writeRegular(target, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("archive entry %q: unexpected type %q in an OCI layout", hdr.Name, hdr.Typeflag)
		}
	}
}

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
