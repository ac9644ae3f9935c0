package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	rootFd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rootFd)
	u := &unpacker{root: rootFd}
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
			fd, err := u.openDir(rel, true)
			if err != nil {
				return err
			}
			unix.Close(fd)
		case tar.TypeReg:
			if err := u.plainFile(rel, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("archive entry %q: unexpected type %q in an OCI layout", hdr.Name, hdr.Typeflag)
		}
	}
}

// plainFile writes the regular file rel, replacing an earlier one.
func (u *unpacker) plainFile(rel string, body io.Reader) error {
	parentRel, base := path.Split(rel)
	parent, err := u.openDir(parentRel, true)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if _, err := u.clearTarget(parent, base, false); err != nil {
		return err
	}
	return writeRegular(parent, base, body)
}
