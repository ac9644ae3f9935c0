package images

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

var (
	catOnce sync.Once
	catSet  Set
	catErr  error
)

// catalogue builds the catalogue once for all tests in this package.
func catalogue(t *testing.T) Set {
	t.Helper()
	hostcheck.Require(t, hostcheck.BusyboxStatic, hostcheck.Gcc)
	catOnce.Do(func() { catSet, catErr = Catalogue(context.Background(), Options{}) })
	if catErr != nil {
		t.Fatal(catErr)
	}
	return catSet
}

func digests(t *testing.T, s Set) map[string]string {
	t.Helper()
	out := map[string]string{}
	for ref, a := range s {
		var h v1.Hash
		var err error
		if a.Index != nil {
			h, err = a.Index.Digest()
		} else {
			h, err = a.Image.Digest()
		}
		if err != nil {
			t.Fatalf("%s: digest: %v", ref, err)
		}
		out[ref] = h.String()
	}
	return out
}

func TestCatalogueDigestsAreReproducible(t *testing.T) {
	first := digests(t, catalogue(t))
	again, err := Catalogue(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	second := digests(t, again)
	if len(first) != len(second) || len(first) < 8 {
		t.Fatalf("catalogue sizes: %d then %d, want the same and at least 8", len(first), len(second))
	}
	for ref, d := range first {
		if second[ref] != d {
			t.Errorf("%s: digest %s then %s", ref, d, second[ref])
		}
	}
}

// layerEntries reads a layer's uncompressed tar into name -> header.
func layerEntries(t *testing.T, l v1.Layer) map[string]*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

func TestLayeredHasWhiteoutAndOpaqueEntries(t *testing.T) {
	img := catalogue(t)[Layered].Image
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 4 {
		t.Fatalf("Layered has %d layers, want 4", len(layers))
	}
	middle := layerEntries(t, layers[2])
	for _, want := range []string{"data/.wh.gone.txt", "opaque/.wh..wh..opq", "opaque/new.txt"} {
		if _, ok := middle[want]; !ok {
			t.Errorf("layer 3 of 4 lacks %s; has %v", want, keys(middle))
		}
	}
	// go-containerregistry's flattening applies the whiteouts independently
	// of our own code: the merged view must match LayeredPresent/Absent.
	merged := flatten(t, img)
	for p, want := range LayeredPresent {
		if got, ok := merged[strings.TrimPrefix(p, "/")]; !ok || got != want {
			t.Errorf("merged %s = %q (present %v), want %q", p, got, ok, want)
		}
	}
	for _, p := range LayeredAbsent {
		if _, ok := merged[strings.TrimPrefix(p, "/")]; ok {
			t.Errorf("merged root still has %s", p)
		}
	}
}

func keys(m map[string]*tar.Header) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// flatten returns the regular files of img's merged root and their contents.
func flatten(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg && h.Size < 1<<16 {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = string(b)
		} else {
			out[h.Name] = ""
		}
	}
}

func TestMediaTypesPerFormat(t *testing.T) {
	set := catalogue(t)
	for ref, want := range map[string][3]types.MediaType{
		Busybox:       {types.OCIManifestSchema1, types.OCIConfigJSON, types.OCILayer},
		BusyboxDocker: {types.DockerManifestSchema2, types.DockerConfigJSON, types.DockerLayer},
	} {
		m, err := set[ref].Image.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.MediaType != want[0] || m.Config.MediaType != want[1] {
			t.Errorf("%s: manifest %s config %s, want %s %s", ref, m.MediaType, m.Config.MediaType, want[0], want[1])
		}
		for _, l := range m.Layers {
			if l.MediaType != want[2] {
				t.Errorf("%s: layer media type %s, want %s", ref, l.MediaType, want[2])
			}
		}
	}
}

func TestSameRootFSInBothFormats(t *testing.T) {
	set := catalogue(t)
	oci, _ := set[Busybox].Image.ConfigFile()
	docker, _ := set[BusyboxDocker].Image.ConfigFile()
	if oci == nil || docker == nil || len(oci.RootFS.DiffIDs) != 1 || oci.RootFS.DiffIDs[0] != docker.RootFS.DiffIDs[0] {
		t.Fatalf("OCI and Docker busybox differ in root filesystem: %v vs %v", oci, docker)
	}
}

func TestMultiArchIndexHasBothPlatforms(t *testing.T) {
	set := catalogue(t)
	im, err := set[MultiArch].Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s", im.MediaType)
	}
	got := map[string]v1.Hash{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry %s has no platform", d.Digest)
		}
		got[d.Platform.OS+"/"+d.Platform.Architecture] = d.Digest
	}
	amd, _ := set[Busybox].Image.Digest()
	if len(got) != 2 || got["linux/amd64"] != amd || got["linux/arm64"] == (v1.Hash{}) {
		t.Fatalf("index platforms %v, want linux/amd64 = busybox %s and linux/arm64", got, amd)
	}
}

func TestBusyboxRootLayout(t *testing.T) {
	layers, err := catalogue(t)[Busybox].Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	entries := layerEntries(t, layers[0])
	bb := entries["bin/busybox"]
	if bb == nil || bb.Typeflag != tar.TypeReg || bb.Mode&0o111 == 0 {
		t.Fatalf("bin/busybox: %+v", bb)
	}
	for _, applet := range []string{"sh", "ls", "httpd", "sleep"} {
		h := entries["bin/"+applet]
		if h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "bin/busybox" || h.Mode != 0o755 {
			t.Errorf("bin/%s: want hard link to bin/busybox mode 0755, got %+v", applet, h)
		}
	}
	if tmp := entries["tmp/"]; tmp == nil || tmp.Mode != 0o1777 {
		t.Errorf("tmp/: %+v, want mode 1777", tmp)
	}
	if h := entries["bin/busybox"]; !h.ModTime.Equal(Epoch) {
		t.Errorf("mtime %v, want %v", h.ModTime, Epoch)
	}
}

func TestConfigs(t *testing.T) {
	set := catalogue(t)
	cfg := func(ref string) v1.Config {
		cf, err := set[ref].Image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Equal(Epoch) {
			t.Errorf("%s: platform %s/%s created %v", ref, cf.OS, cf.Architecture, cf.Created)
		}
		return cf.Config
	}
	if u := cfg(NonRoot).User; u != "1000:1000" {
		t.Errorf("NonRoot user %q", u)
	}
	if u := cfg(Pause).User; u != "65535:65535" {
		t.Errorf("Pause user %q", u)
	}
	e := cfg(Entrypoint)
	if strings.Join(e.Entrypoint, " ") != "/bin/echo entrypoint:" || strings.Join(e.Cmd, " ") != "default-cmd" ||
		e.WorkingDir != "/work" || !contains(e.Env, "GREETING=hello-from-image") {
		t.Errorf("Entrypoint config %+v", e)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPauseExitsOnSIGTERM runs the image's pause binary on the host: it must
// keep running until signalled, then exit 0 (a plain sleep as PID 1 would
// ignore SIGTERM; as a child here it would die by the signal, not exit 0).
func TestPauseExitsOnSIGTERM(t *testing.T) {
	layers, err := catalogue(t)[Pause].Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var pause []byte
	rc, _ := layers[0].Uncompressed()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no pause in layer: %v", err)
		}
		if h.Name == "pause" {
			pause, _ = io.ReadAll(tr)
			break
		}
	}
	rc.Close()
	bin := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(bin, pause, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The PID-1 warning on stderr shows it has started and installed its handlers.
	buf := make([]byte, 64)
	if _, err := io.ReadAtLeast(stderr, buf, len("Warning")); err != nil {
		t.Fatalf("pause printed nothing: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pause after SIGTERM: %v (stderr %q)", err, rest)
	}
	if !strings.Contains(string(rest), "Shutting down") {
		t.Errorf("pause stderr after SIGTERM: %q", rest)
	}
}

func TestRepositoryPath(t *testing.T) {
	for in, want := range map[string]string{
		"registry.k8s.io/e2e-test-images/busybox:1.29-2": "e2e-test-images/busybox:1.29-2",
		"localhost/x:1":             "x:1",
		"127.0.0.1:5000/a/b:c":      "a/b:c",
		"berth-test/busybox:latest": "berth-test/busybox:latest",
		"busybox":                   "busybox",
	} {
		if got := RepositoryPath(in); got != want {
			t.Errorf("RepositoryPath(%q) = %q, want %q", in, got, want)
		}
	}
}
