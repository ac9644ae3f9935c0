package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// A jail is a temporary directory holding a root that outside input is
// unpacked into and, beside it, a directory with one file that nothing may
// touch. escapes walks the jail after each input and reports anything that
// was written outside the root.
type jail struct {
	dir, root, outside, sentinel string
	before                       map[string]fs.FileInfo
}

const sentinelBody = "never written through the root"

func newJail(t testing.TB) *jail {
	t.Helper()
	dir := t.TempDir()
	j := &jail{dir: dir, root: filepath.Join(dir, "root"), outside: filepath.Join(dir, "outside")}
	j.sentinel = filepath.Join(j.outside, "sentinel")
	for _, d := range []string{j.root, j.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(j.sentinel, []byte(sentinelBody), 0o644); err != nil {
		t.Fatal(err)
	}
	j.before = map[string]fs.FileInfo{}
	for _, p := range []string{j.dir, j.outside, j.sentinel} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		j.before[p] = fi
	}
	return j
}

// escapes fails t if anything outside the jail's root exists or changed.
// input is the tar stream that was unpacked, named in the failure by its
// entries.
func (j *jail) escapes(t testing.TB, archive []byte) {
	t.Helper()
	input := tarNames(archive)
	err := filepath.WalkDir(j.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == j.root {
			return filepath.SkipDir
		}
		if _, known := j.before[p]; !known {
			t.Fatalf("entries %v wrote %s outside the root", input, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", j.dir, err)
	}
	for p, was := range j.before {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatalf("entries %v removed %s outside the root: %v", input, p, err)
		}
		if fi.Mode() != was.Mode() || !fi.ModTime().Equal(was.ModTime()) || fi.Size() != was.Size() || inode(fi) != inode(was) {
			t.Fatalf("entries %v changed %s outside the root (mode, times, owner or xattrs)", input, p)
		}
	}
	if body, err := os.ReadFile(j.sentinel); err != nil || string(body) != sentinelBody {
		t.Fatalf("entries %v wrote the file outside the root: %q %v", input, body, err)
	}
}

// inode is what fs.FileInfo leaves out: ownership, and the change time,
// which moves with any change to the inode (an xattr, a chmod, a link).
func inode(fi fs.FileInfo) [3]int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [3]int64{}
	}
	return [3]int64{int64(st.Uid), int64(st.Gid), st.Ctim.Nano()}
}

// tarNames lists the entries of a tar stream, as far as it reads.
func tarNames(archive []byte) []string {
	var names []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if err != nil {
			return names
		}
		names = append(names, fmt.Sprintf("%q(%c -> %q)", hdr.Name, hdr.Typeflag, hdr.Linkname))
	}
}

// FuzzUnpackLayer unpacks arbitrary tar streams as image layers. Whatever
// the stream holds (links out of the root, whiteouts of paths through
// links, entries replacing each other), nothing outside the root is
// written. Seeds: escape attempts below and testdata/fuzz.
func FuzzUnpackLayer(f *testing.F) {
	hostcheck.Require(f, hostcheck.Root)
	for _, entries := range [][]entry{
		{dir("etc"), file("etc/passwd", "root:x:0:0::/:/bin/sh\n"), symlink("bin", "usr/bin"), hardlink("etc/p2", "etc/passwd")},
		{symlink("up", "../outside"), file("up/sentinel", "x")},
		{symlink("up", "../outside"), whiteout("up/sentinel")},
		{symlink("up", "../outside"), opaque("up")},
		{symlink("up", "../outside/sentinel"), hardlink("h", "up"), file("h", "x")},
		{file("../outside/x", "x")},
		{dir("a"), whiteout("a/b"), dir("a/b"), whiteout("a"), opaque("a")},
		{symlink("a", "."), file("a/b", "x"), whiteout("a/../../outside/sentinel")},
		{file("a", "x"), hardlink("b", "../outside/sentinel"), hardlink("c", "/a")},
		{file(".wh...", "")}, // a whiteout of ".." once marked the layer root's parent opaque
		{dir("a"), file("a/.wh...", "")},
		{{name: "dev/null", typ: tar.TypeChar, mode: 0o666, major: 1, minor: 3}, {name: "f", typ: tar.TypeFifo, mode: 0o600}},
		{{name: "x", typ: tar.TypeReg, mode: 0o4755, body: "x", xattrs: map[string]string{"user.a": "b", "trusted.overlay.opaque": "y"}}},
	} {
		f.Add(tarBytes(f, entries...))
	}
	f.Fuzz(func(t *testing.T, layer []byte) {
		j := newJail(t)
		_ = unpackLayer(j.root, bytes.NewReader(layer), 1<<24)
		j.escapes(t, layer)
	})
}

// An OCI layout or docker-save archive as fuzz input: the blobs are given
// and the harness names them, so the fuzzer mutates their content without
// having to keep digests right. A placeholder in a document is replaced by
// the digest or size of the blob it names before the archive is built.
const (
	phLayerDigest    = "@layer-digest"
	phLayerSize      = "@layer-size"
	phLayerDiffID    = "@layer-diffid"
	phConfigDigest   = "@config-digest"
	phConfigSize     = "@config-size"
	phManifestDigest = "@manifest-digest"
	phManifestSize   = "@manifest-size"
)

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func fill(doc []byte, pairs ...string) []byte {
	return []byte(strings.NewReplacer(pairs...).Replace(string(doc)))
}

// tarFiles writes name/content pairs as a tar of regular files.
func tarFiles(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	entries := make([]entry, 0, len(files))
	for _, f := range files {
		entries = append(entries, file(f[0], f[1]))
	}
	return tarBytes(t, entries...)
}

func ociLayout(t testing.TB, index, manifest, config, layer []byte) []byte {
	t.Helper()
	config = fill(config, phLayerDiffID, digestOf(layer))
	manifest = fill(manifest, phConfigDigest, digestOf(config), phConfigSize, strconv.Itoa(len(config)),
		phLayerDigest, digestOf(layer), phLayerSize, strconv.Itoa(len(layer)))
	index = fill(index, phManifestDigest, digestOf(manifest), phManifestSize, strconv.Itoa(len(manifest)))
	blob := func(b []byte) string { return "blobs/sha256/" + strings.TrimPrefix(digestOf(b), "sha256:") }
	return tarFiles(t, [2]string{"oci-layout", `{"imageLayoutVersion":"1.0.0"}`}, [2]string{"index.json", string(index)},
		[2]string{blob(manifest), string(manifest)}, [2]string{blob(config), string(config)}, [2]string{blob(layer), string(layer)})
}

func dockerArchive(t testing.TB, manifest, config, layer []byte) []byte {
	t.Helper()
	config = fill(config, phLayerDiffID, digestOf(layer))
	return tarFiles(t, [2]string{"manifest.json", string(manifest)}, [2]string{"config.json", string(config)},
		[2]string{"layer.tar", string(layer)})
}

// Seed documents: a valid image, with the placeholders.
const (
	seedConfig = `{"architecture":"amd64","os":"linux","config":{"User":"1000:1000","Cmd":["sh"],"Env":["PATH=/bin"]},` +
		`"rootfs":{"type":"layers","diff_ids":["@layer-diffid"]},"history":[{"created_by":"fuzz"}]}`
	seedManifest = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",` +
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"@config-digest","size":@config-size},` +
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"@layer-digest","size":@layer-size}]}`
	seedIndex = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"@manifest-digest","size":@manifest-size,` +
		`"annotations":{"io.containerd.image.name":"example.com/fuzz/app:v1"},"platform":{"architecture":"amd64","os":"linux"}}]}`
	seedDockerManifest = `[{"Config":"config.json","RepoTags":["example.com/fuzz/app:v1"],"Layers":["layer.tar"]}]`
)

// fuzzService is an image service in a jail's root.
func fuzzService(f *testing.F) (*Service, *jail) {
	hostcheck.Require(f, hostcheck.Root)
	j := newJail(f)
	return newTestService(f, j.root, nil), j
}

// checkImported holds the invariants of an import that succeeded: every
// image it names can be described (CRI ImageStatus, verbose, as crictl
// inspecti asks) and resolved for a container, then is removed again so
// the store stays small.
func checkImported(t *testing.T, s *Service, ids []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range ids {
		st, err := s.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: id}, Verbose: true})
		if err != nil || st.GetImage().GetId() != id {
			t.Fatalf("imported %s, ImageStatus: %v %v", id, st, err)
		}
		if _, err := s.Resolve(ctx, id); err != nil {
			t.Fatalf("imported %s, Resolve: %v", id, err)
		}
		if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}}); err != nil {
			t.Fatalf("remove %s: %v", id, err)
		}
	}
}

// FuzzImportLayout imports OCI layouts built from an arbitrary index,
// manifest, config and layer (see the placeholders above): what `berth
// image import` and the CRI import path do with an archive a user hands
// over. Nothing is written outside the store's root.
func FuzzImportLayout(f *testing.F) {
	s, j := fuzzService(f)
	layer := tarBytes(f, dir("etc"), file("etc/marker", "fuzz"))
	f.Add([]byte(seedIndex), []byte(seedManifest), []byte(seedConfig), layer)
	nested := `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"@manifest-digest","size":@manifest-size}]}`
	f.Add([]byte(nested), []byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:`+strings.Repeat("0", 64)+`","size":1,"platform":{"os":"linux","architecture":"amd64"}}]}`), []byte(seedConfig), layer)
	f.Add([]byte(strings.Replace(seedIndex, "example.com/fuzz/app:v1", "../../x", 1)), []byte(seedManifest), []byte(seedConfig), layer)
	f.Add([]byte(seedIndex), []byte(strings.Replace(seedManifest, "@layer-digest", "sha256:../../../outside/sentinel", 1)), []byte(seedConfig), layer)
	f.Add([]byte(seedIndex), []byte(seedManifest), []byte(`{"rootfs":{"diff_ids":[]}}`), tarBytes(f, symlink("up", "../outside"), file("up/x", "x")))
	f.Fuzz(func(t *testing.T, index, manifest, config, layer []byte) {
		archive := ociLayout(t, index, manifest, config, layer)
		ids, err := s.Import(context.Background(), bytes.NewReader(archive))
		if err == nil {
			checkImported(t, s, ids)
		}
		j.escapes(t, archive)
	})
}

// FuzzImportDockerArchive is FuzzImportLayout for docker-save archives:
// an arbitrary manifest.json and config, and a layer.
func FuzzImportDockerArchive(f *testing.F) {
	s, j := fuzzService(f)
	layer := tarBytes(f, dir("etc"), file("etc/marker", "fuzz"))
	f.Add([]byte(seedDockerManifest), []byte(seedConfig), layer)
	f.Add([]byte(`[{"Config":"config.json","RepoTags":null,"Layers":["layer.tar"]}]`), []byte(seedConfig), layer)
	f.Add([]byte(`[{"Config":"../outside/sentinel","RepoTags":["a:b"],"Layers":["layer.tar","layer.tar"]}]`), []byte(seedConfig), layer)
	f.Add([]byte(`[{"Config":"config.json","RepoTags":["UPPER/case:tag","x@sha256:00"],"Layers":[]}]`), []byte(`{"rootfs":{"diff_ids":[]}}`), layer)
	f.Fuzz(func(t *testing.T, manifest, config, layer []byte) {
		archive := dockerArchive(t, manifest, config, layer)
		ids, err := s.Import(context.Background(), bytes.NewReader(archive))
		if err == nil {
			checkImported(t, s, ids)
		}
		j.escapes(t, archive)
	})
}

// FuzzImageRef resolves arbitrary image references (what a CRI client
// names in ImageStatus, RemoveImage and CreateContainer) against a store
// holding one image: only names of that image find it.
func FuzzImageRef(f *testing.F) {
	s, _ := fuzzService(f)
	layer := tarBytes(f, dir("etc"), file("etc/marker", "fuzz"))
	ids, err := s.Import(context.Background(), bytes.NewReader(ociLayout(f, []byte(seedIndex), []byte(seedManifest), []byte(seedConfig), layer)))
	if err != nil || len(ids) != 1 {
		f.Fatalf("import the seed image: %v %v", ids, err)
	}
	id := ids[0]
	for _, ref := range []string{id, strings.TrimPrefix(id, "sha256:")[:12], "example.com/fuzz/app:v1", "example.com/fuzz/app",
		"example.com/fuzz/app@" + id, "docker.io/library/busybox", "sha256:", "", "EXAMPLE.com/fuzz/app:v1", "example.com/fuzz/app:v1@sha256:abc"} {
		f.Add(ref)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		info, err := s.Resolve(context.Background(), ref)
		if err != nil {
			if c := status.Code(err); c != codes.NotFound && c != codes.InvalidArgument {
				t.Fatalf("%q: %v, want NotFound or InvalidArgument", ref, err)
			}
			return
		}
		if info.ID != id {
			t.Fatalf("%q resolved to %q, the only image is %q", ref, info.ID, id)
		}
	})
}
