package image

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPullByTagAndByDigest(t *testing.T) {
	reg := startRegistry(t, nil)
	img := simpleImage(t, "by-tag")
	reg.push(t, "test/app:1", img)
	wantID := mustDigest(t, img.ConfigName)
	manifestDigest := mustDigest(t, img.Digest)
	s := newTestService(t, t.TempDir(), nil)

	tagRef := reg.host + "/test/app:1"
	if id := pull(t, s, tagRef); id != wantID {
		t.Fatalf("PullImage by tag returned %s, want config digest %s", id, wantID)
	}
	st := imageStatus(t, s, tagRef)
	if st == nil {
		t.Fatal("ImageStatus by tag: image not found after pull")
	}
	wantDigest := reg.host + "/test/app@" + manifestDigest
	if !slices.Equal(st.RepoTags, []string{tagRef}) || !slices.Equal(st.RepoDigests, []string{wantDigest}) {
		t.Fatalf("tags %v digests %v, want [%s] [%s]", st.RepoTags, st.RepoDigests, tagRef, wantDigest)
	}
	if st.Size == 0 {
		t.Fatal("image size is 0")
	}
	for _, ref := range []string{wantID, wantID[len("sha256:"):], wantID[len("sha256:") : len("sha256:")+12], wantDigest} {
		if got := imageStatus(t, s, ref); got == nil || got.Id != wantID {
			t.Fatalf("ImageStatus(%q) = %v, want image %s", ref, got, wantID)
		}
	}

	// A fresh store pulling by digest gets no tag, only the digest.
	s2 := newTestService(t, t.TempDir(), nil)
	if id := pull(t, s2, wantDigest); id != wantID {
		t.Fatalf("PullImage by digest returned %s, want %s", id, wantID)
	}
	st = imageStatus(t, s2, wantDigest)
	if st == nil || len(st.RepoTags) != 0 || !slices.Equal(st.RepoDigests, []string{wantDigest}) {
		t.Fatalf("after pull by digest: %v", st)
	}
}

func TestPullMissingImageIsNotFound(t *testing.T) {
	reg := startRegistry(t, nil)
	s := newTestService(t, t.TempDir(), nil)
	_, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.host + "/no/such:1"}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("pull of a missing image: %v, want NotFound", err)
	}
	if resp, _ := s.ListImages(context.Background(), &runtimeapi.ListImagesRequest{}); len(resp.Images) != 0 {
		t.Fatalf("failed pull left images: %v", resp.Images)
	}
}

func TestPullThroughMirrorKeepsUpstreamName(t *testing.T) {
	reg := startRegistry(t, nil)
	img := simpleImage(t, "mirrored")
	reg.push(t, "e2e-test-images/busybox:1.29-2", img)
	s := newTestService(t, t.TempDir(), func(c *Config) {
		c.Mirrors = map[string][]string{"registry.k8s.io": {"http://" + reg.host}}
	})
	ref := "registry.k8s.io/e2e-test-images/busybox:1.29-2"
	id := pull(t, s, ref)
	st := imageStatus(t, s, ref)
	if st == nil || st.Id != id || !slices.Equal(st.RepoTags, []string{ref}) {
		t.Fatalf("status after mirrored pull: %v", st)
	}
	want := "registry.k8s.io/e2e-test-images/busybox@" + mustDigest(t, img.Digest)
	if !slices.Equal(st.RepoDigests, []string{want}) {
		t.Fatalf("repo digests %v, want [%s]", st.RepoDigests, want)
	}
	if reg.count("GET", "/v2/e2e-test-images/busybox/manifests/1.29-2") == 0 {
		t.Fatal("the mirror was not asked for the manifest")
	}
}

func TestShortNamesNormaliseToDockerHub(t *testing.T) {
	reg := startRegistry(t, nil)
	reg.push(t, "library/busybox:latest", simpleImage(t, "hub"))
	s := newTestService(t, t.TempDir(), func(c *Config) {
		c.Mirrors = map[string][]string{"docker.io": {"http://" + reg.host}}
	})
	id := pull(t, s, "busybox")
	st := imageStatus(t, s, "docker.io/library/busybox:latest")
	if st == nil || st.Id != id || !slices.Equal(st.RepoTags, []string{"docker.io/library/busybox:latest"}) {
		t.Fatalf("short name pull: %v", st)
	}
	if got := imageStatus(t, s, "busybox:latest"); got == nil || got.Id != id {
		t.Fatalf("status by short name: %v", got)
	}
}

func TestInsecureRegistryUsesPlainHTTPOnlyWhenListed(t *testing.T) {
	reg := startRegistry(t, nil)
	reg.push(t, "app:1", simpleImage(t, "insecure"))
	// A name that is not an IP literal: go-containerregistry would reach
	// 127.0.0.1 over plain HTTP by itself; registry.test must be listed.
	ref := "registry.test:5000/app:1"
	tr := loopbackTransport(reg.host)

	secure := newTestService(t, t.TempDir(), func(c *Config) { c.Transport = tr })
	_, err := secure.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err == nil {
		t.Fatal("pull over HTTPS from a plain-HTTP registry succeeded")
	}

	insecure := newTestService(t, t.TempDir(), func(c *Config) {
		c.Transport = tr
		c.Insecure = []string{"registry.test:5000"}
	})
	id := pull(t, insecure, ref)
	if st := imageStatus(t, insecure, ref); st == nil || st.Id != id {
		t.Fatalf("status after insecure pull: %v", st)
	}
}

func basicAuth(user, pass string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestPullWithAuth(t *testing.T) {
	reg := startRegistry(t, basicAuth("alice", "s3cret"))
	reg.push(t, "private/app:1", simpleImage(t, "auth"), remote.WithAuth(&authn.Basic{Username: "alice", Password: "s3cret"}))
	ref := reg.host + "/private/app:1"
	ctx := context.Background()

	anon := newTestService(t, t.TempDir(), nil)
	_, err := anon.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("anonymous pull: %v, want Unauthenticated", err)
	}
	_, err = anon.PullImage(ctx, &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: ref},
		Auth:  &runtimeapi.AuthConfig{Username: "alice", Password: "wrong"},
	})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("pull with a wrong password: %v, want Unauthenticated", err)
	}
	if _, err := anon.PullImage(ctx, &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: ref},
		Auth:  &runtimeapi.AuthConfig{Username: "alice", Password: "s3cret"},
	}); err != nil {
		t.Fatalf("pull with CRI AuthConfig: %v", err)
	}

	dockerConfig := filepath.Join(t.TempDir(), "config.json")
	raw, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.host: map[string]string{"username": "alice", "password": "s3cret"}}})
	if err := os.WriteFile(dockerConfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := newTestService(t, t.TempDir(), func(c *Config) { c.DockerConfig = dockerConfig })
	pull(t, fromFile, ref)
}

func TestConcurrentPullsFetchEachBlobOnce(t *testing.T) {
	reg := startRegistry(t, nil)
	base := layer(t, dir("bin"), file("bin/sh", "shell"))
	top := layer(t, dir("etc"), file("etc/os", "concurrent"))
	img := testImage(t, "", base, top)
	reg.push(t, "test/conc:1", img)
	reg.reset()
	metrics := prometheus.NewRegistry()
	s := newTestService(t, t.TempDir(), func(c *Config) { c.Metrics = metrics })

	const pullers = 8
	ids := make([]string, pullers)
	errs := make([]error, pullers)
	var wg sync.WaitGroup
	for i := range pullers {
		wg.Go(func() {
			resp, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.host + "/test/conc:1"}})
			errs[i] = err
			if err == nil {
				ids[i] = resp.ImageRef
			}
		})
	}
	wg.Wait()
	for i := range pullers {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("puller %d: id %q err %v (first id %q)", i, ids[i], errs[i], ids[0])
		}
	}
	var layerBytes int64
	for _, l := range mustLayers(t, img) {
		d, _ := l.Digest()
		size, _ := l.Size()
		layerBytes += size
		if n := reg.count("GET", "/v2/test/conc/blobs/"+d.String()); n != 1 {
			t.Fatalf("layer %s fetched %d times, want 1", d, n)
		}
	}
	families := gather(t, metrics)
	if got := families["berth_image_pull_bytes_total"].GetMetric()[0].GetCounter().GetValue(); got != float64(layerBytes) {
		t.Fatalf("pull bytes metric %v, want %d", got, layerBytes)
	}
	if got := families["berth_image_pull_layers_total"].GetMetric()[0].GetCounter().GetValue(); got != 2 {
		t.Fatalf("pull layers metric %v, want 2", got)
	}
	// Eight callers, one pull: one observation.
	if got := families["berth_image_pull_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); got != 1 {
		t.Fatalf("pull duration observations %d, want 1", got)
	}
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// TestCancelledCallerDoesNotFailSharedPull: two callers share one pull; the
// first gives up, the second still gets the image. When every caller has
// gone, the registry sees the download abandoned.
func TestCancelledCallerDoesNotFailSharedPull(t *testing.T) {
	img := simpleImage(t, "shared")
	layerPath := "/blobs/" + mustDigest(t, mustLayers(t, img)[0].Digest)
	release := make(chan struct{})
	abandoned := make(chan struct{}, 8)
	hold := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, layerPath) {
				select {
				case <-release:
				case <-r.Context().Done():
					abandoned <- struct{}{}
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	reg := startRegistry(t, hold)
	reg.push(t, "test/shared:1", img)
	s := newTestService(t, t.TempDir(), nil)
	ref := reg.host + "/test/shared:1"
	key := ref // already normalised: host:port/path:tag

	waiters := func() int {
		s.inflightMu.Lock()
		defer s.inflightMu.Unlock()
		if p := s.inflight[key]; p != nil {
			return p.waiters
		}
		return 0
	}
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() { _, err := s.Pull(firstCtx, ref, nil); firstErr <- err }()
	secondID := make(chan string, 1)
	secondErr := make(chan error, 1)
	go func() {
		id, err := s.Pull(context.Background(), ref, nil)
		secondID <- id
		secondErr <- err
	}()
	for waiters() != 2 {
		runtime.Gosched()
	}
	cancelFirst()
	if err := <-firstErr; status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled caller got %v, want Canceled", err)
	}
	close(release)
	if id, err := <-secondID, <-secondErr; err != nil || id != mustDigest(t, img.ConfigName) {
		t.Fatalf("remaining caller got %q, %v; want the image", id, err)
	}

	// A pull that every caller abandons stops downloading.
	s2 := newTestService(t, t.TempDir(), nil)
	onlyCtx, cancelOnly := context.WithCancel(context.Background())
	done := make(chan error, 1)
	reg2 := startRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, layerPath) {
				cancelOnly() // the caller gives up while the layer is in flight
				<-r.Context().Done()
				abandoned <- struct{}{}
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	reg2.push(t, "test/shared:1", img)
	go func() { _, err := s2.Pull(onlyCtx, reg2.host+"/test/shared:1", nil); done <- err }()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("abandoned pull: %v, want Canceled", err)
	}
	<-abandoned // the registry saw the request cancelled; the test hangs if it never is
}

// hostRecorder is a transport that records the hosts requests are sent to
// and dials only the loopback registry.
type hostRecorder struct {
	mu    sync.Mutex
	hosts map[string]int
	next  http.RoundTripper
}

func (h *hostRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.hosts[r.URL.Host]++
	h.mu.Unlock()
	return h.next.RoundTrip(r)
}

func TestMirroredHostIsNeverContacted(t *testing.T) {
	reg := startRegistry(t, nil)
	rec := &hostRecorder{hosts: map[string]int{}, next: loopbackTransport(reg.host)}
	s := newTestService(t, t.TempDir(), func(c *Config) {
		c.Mirrors = map[string][]string{"registry.k8s.io": {"http://" + reg.host}}
		c.Transport = rec
	})
	_, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/absent:1"}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("pull of an image the mirror lacks: %v, want NotFound", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.hosts["registry.k8s.io"] != 0 || rec.hosts[reg.host] == 0 {
		t.Fatalf("requests by host %v: want the mirror only", rec.hosts)
	}
}

func TestPullZstdAndUncompressedLayers(t *testing.T) {
	reg := startRegistry(t, nil)
	zraw := tarBytes(t, file("zstd-file", "zstd"))
	zl, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(zraw)), nil },
		tarball.WithCompression(compression.ZStd), tarball.WithMediaType(types.OCILayerZStd))
	if err != nil {
		t.Fatal(err)
	}
	plain := static.NewLayer(tarBytes(t, file("plain-file", "plain")), types.OCIUncompressedLayer)
	img := testImage(t, "", zl, plain)
	reg.push(t, "test/formats:1", img)
	s := newTestService(t, t.TempDir(), nil)
	id := pull(t, s, reg.host+"/test/formats:1")
	chains := chainIDs(mustConfig(t, img).RootFS.DiffIDs)
	for i, want := range map[int][2]string{0: {"zstd-file", "zstd"}, 1: {"plain-file", "plain"}} {
		got, err := os.ReadFile(filepath.Join(s.layers.path(chains[i]), want[0]))
		if err != nil || string(got) != want[1] {
			t.Errorf("image %s layer %d: %s = %q, %v; want %q", id, i, want[0], got, err, want[1])
		}
	}
}
