package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// testRegistry is an in-process OCI registry on 127.0.0.1 that counts the
// requests it serves by method and path.
type testRegistry struct {
	host string // 127.0.0.1:PORT
	mu   sync.Mutex
	hits map[string]int
}

func startRegistry(t testing.TB, wrap func(http.Handler) http.Handler) *testRegistry {
	t.Helper()
	r := &testRegistry{hits: map[string]int{}}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.hits[req.Method+" "+req.URL.Path]++
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func (r *testRegistry) count(method, path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[method+" "+path]
}

func (r *testRegistry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hits = map[string]int{}
}

// push uploads img to this registry as repoTag ("repo/path:tag").
func (r *testRegistry) push(t testing.TB, repoTag string, img v1.Image, opts ...remote.Option) {
	t.Helper()
	ref, err := name.ParseReference(r.host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// loopbackTransport sends every connection to target (a loopback address),
// whatever host the request names, so tests can use registry names that are
// not IP literals (which go-containerregistry would reach over plain HTTP
// anyway) without any traffic leaving the machine.
func loopbackTransport(target string) http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, target)
	}
	tr.TLSHandshakeTimeout = 5 * time.Second
	return tr
}

// entry is one tar entry of a test layer.
type entry struct {
	name     string
	typ      byte
	mode     int64
	body     string
	linkname string
	uid, gid int
	xattrs   map[string]string
	major    int64
	minor    int64
}

func dir(name string) entry { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }
func file(name, body string) entry {
	return entry{name: name, typ: tar.TypeReg, mode: 0o644, body: body}
}
func symlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeSymlink, linkname: target, mode: 0o777}
}
func hardlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeLink, linkname: target}
}
func whiteout(path string) entry {
	i := strings.LastIndex(path, "/")
	return file(path[:i+1]+".wh."+path[i+1:], "")
}
func opaque(dir string) entry { return file(dir+"/.wh..wh..opq", "") }

func tarBytes(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.name, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)),
			Linkname: e.linkname, Uid: e.uid, Gid: e.gid, Devmajor: e.major, Devminor: e.minor,
			ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX,
		}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		for k, v := range e.xattrs {
			if hdr.PAXRecords == nil {
				hdr.PAXRecords = map[string]string{}
			}
			hdr.PAXRecords[paxXattrPrefix+k] = v
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func layer(t testing.TB, entries ...entry) v1.Layer {
	t.Helper()
	raw := tarBytes(t, entries...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testImage builds an image from layers with the given USER.
func testImage(t testing.TB, user string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", pullPlatform.Architecture
	cf.Config.User = user
	cf.Config.Cmd = []string{"sh"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// simpleImage is a one-layer image whose content is unique to marker.
func simpleImage(t testing.TB, marker string) v1.Image {
	return testImage(t, "", layer(t, dir("etc"), file("etc/marker", marker)))
}

// newTestService opens a Service on root. Every store test needs root:
// unpacking sets file ownership and makes device nodes.
func newTestService(t testing.TB, root string, edit func(*Config)) *Service {
	t.Helper()
	hostcheck.Require(t, hostcheck.Root)
	cfg := Config{Root: root}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func pull(t testing.TB, s *Service, ref string) string {
	t.Helper()
	resp, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("PullImage %s: %v", ref, err)
	}
	return resp.ImageRef
}

func imageStatus(t testing.TB, s *Service, ref string) *runtimeapi.Image {
	t.Helper()
	resp, err := s.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("ImageStatus %s: %v", ref, err)
	}
	return resp.Image
}

func mustDigest(t testing.TB, f func() (v1.Hash, error)) string {
	t.Helper()
	h, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func mustLayers(t testing.TB, img v1.Image) []v1.Layer {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func mustHash(t testing.TB, s string) v1.Hash {
	t.Helper()
	h, err := v1.NewHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustConfig(t testing.TB, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cf
}
