package image

import (
	"context"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingHandler hands every log record's message and attributes to a callback.
type recordingHandler struct {
	mu sync.Mutex
	on func(msg string, attrs map[string]any)
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]any{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.Any(); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on(r.Message, attrs)
	return nil
}

func TestPullLogsProgressWhileRunning(t *testing.T) {
	progressSeen := make(chan map[string]any, 1)
	var once sync.Once
	log := slog.New(&recordingHandler{on: func(msg string, attrs map[string]any) {
		if msg == "pull progress" && attrs["layers"] == int64(1) {
			once.Do(func() { progressSeen <- attrs })
		}
	}})
	img := simpleImage(t, "progress")
	layerPath := "/blobs/" + mustDigest(t, mustLayers(t, img)[0].Digest)
	// The registry holds the layer back until the service has reported
	// progress, so the report is guaranteed to happen mid-pull.
	hold := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, layerPath) {
				select {
				case attrs := <-progressSeen:
					progressSeen <- attrs
				case <-r.Context().Done():
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	reg := startRegistry(t, hold)
	reg.push(t, "test/progress:1", img)
	s := newTestService(t, t.TempDir(), func(c *Config) {
		c.Logger = log
		c.ProgressInterval = time.Millisecond
	})
	pull(t, s, reg.host+"/test/progress:1")
	attrs := <-progressSeen
	if attrs["image"] != reg.host+"/test/progress:1" || attrs["layers"] != int64(1) {
		t.Fatalf("progress record %v", attrs)
	}
}

func TestStalledPullIsCancelled(t *testing.T) {
	img := simpleImage(t, "stalled")
	layerPath := "/blobs/" + mustDigest(t, mustLayers(t, img)[0].Digest)
	abandoned := make(chan struct{}, 1)
	stall := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, layerPath) {
				<-r.Context().Done() // sends nothing until the client gives up
				abandoned <- struct{}{}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	reg := startRegistry(t, stall)
	reg.push(t, "test/stalled:1", img)
	s := newTestService(t, t.TempDir(), func(c *Config) {
		c.ProgressInterval = time.Millisecond
		c.StallTimeout = 20 * time.Millisecond
	})
	_, err := s.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.host + "/test/stalled:1"}})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "no data received") {
		t.Fatalf("stalled pull: %v, want Unavailable naming the stall", err)
	}
	<-abandoned
	if st := imageStatus(t, s, reg.host+"/test/stalled:1"); st != nil {
		t.Fatalf("stalled pull recorded an image: %v", st)
	}
}
