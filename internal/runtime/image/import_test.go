package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestImportDockerArchive(t *testing.T) {
	img := testImage(t, "", layer(t, dir("etc"), file("etc/from", "docker-save")))
	tag, err := name.NewTag("example.com/imported/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(tag, img, &buf); err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, t.TempDir(), nil)
	ids, err := s.Import(context.Background(), &buf)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	want := mustDigest(t, img.ConfigName)
	if !slices.Equal(ids, []string{want}) {
		t.Fatalf("imported %v, want [%s]", ids, want)
	}
	st := imageStatus(t, s, "example.com/imported/app:v1")
	if st == nil || st.Id != want {
		t.Fatalf("status of the imported image: %v", st)
	}
	assertSnapshotHas(t, s, want, "etc/from", "docker-save")
}

func TestImportOCILayout(t *testing.T) {
	img := testImage(t, "", layer(t, dir("etc"), file("etc/from", "oci-layout")))
	layoutDir := t.TempDir()
	p, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{annotationContainerdName: "example.com/layout/app:v2"})); err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, t.TempDir(), nil)
	ids, err := s.Import(context.Background(), bytes.NewReader(tarDir(t, layoutDir)))
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	want := mustDigest(t, img.ConfigName)
	if !slices.Equal(ids, []string{want}) {
		t.Fatalf("imported %v, want [%s]", ids, want)
	}
	st := imageStatus(t, s, "example.com/layout/app:v2")
	wantDigest := "example.com/layout/app@" + mustDigest(t, img.Digest)
	if st == nil || st.Id != want || !slices.Equal(st.RepoDigests, []string{wantDigest}) {
		t.Fatalf("status of the imported image: %v", st)
	}
	assertSnapshotHas(t, s, want, "etc/from", "oci-layout")
}

func TestImportRejectsGarbage(t *testing.T) {
	root := t.TempDir()
	s := newTestService(t, root, nil)
	_, err := s.Import(context.Background(), strings.NewReader("this is not a tar archive"))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Import of garbage: %v, want InvalidArgument", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(root, ".import-*")); len(leftovers) != 0 {
		t.Fatalf("Import left %v", leftovers)
	}
}

// assertSnapshotHas checks that the image's top layer snapshot holds path.
func assertSnapshotHas(t *testing.T, s *Service, id, path, want string) {
	t.Helper()
	info, err := s.Resolve(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	diffIDs := info.Config.RootFS.DiffIDs
	top := chainIDs(diffIDs)[len(diffIDs)-1]
	got, err := os.ReadFile(filepath.Join(s.layers.path(top), path))
	if err != nil || string(got) != want {
		t.Fatalf("%s in the unpacked layer = %q, %v; want %q", path, got, err, want)
	}
}

// tarDir archives a directory tree of regular files.
func tarDir(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name, _ = filepath.Rel(dir, p)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
