package image

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// serveGRPC serves s as a CRI ImageService on a unix socket and returns a client.
func serveGRPC(t *testing.T, s *Service) runtimeapi.ImageServiceClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "image.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterImageServiceServer(srv, s)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewImageServiceClient(conn)
}

func TestImageServiceOverGRPC(t *testing.T) {
	reg := startRegistry(t, nil)
	img := simpleImage(t, "grpc")
	reg.push(t, "test/grpc:1", img)
	c := serveGRPC(t, newTestService(t, t.TempDir(), nil))
	ctx := context.Background()
	ref := reg.host + "/test/grpc:1"

	pulled, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatal(err)
	}
	if want := mustDigest(t, img.ConfigName); pulled.ImageRef != want {
		t.Fatalf("PullImage over gRPC = %s, want %s", pulled.ImageRef, want)
	}
	list, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(list.Images) != 1 || list.Images[0].Id != pulled.ImageRef {
		t.Fatalf("ListImages over gRPC: %v %v", list, err)
	}
	fsInfo, err := c.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(fsInfo.ImageFilesystems) != 1 || fsInfo.ImageFilesystems[0].UsedBytes.GetValue() == 0 {
		t.Fatalf("ImageFsInfo over gRPC: %v %v", fsInfo, err)
	}
	if _, err := c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatal(err)
	}
	st, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil || st.Image != nil {
		t.Fatalf("ImageStatus after removal: %v %v", st, err)
	}
	_, err = c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ""}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("empty image over gRPC: %v, want InvalidArgument", err)
	}
}

// TestPullHonoursDeadline is critest's "public image should timeout if
// requested": a pull that outlives the caller's deadline ends with
// DeadlineExceeded and records nothing.
func TestPullHonoursDeadline(t *testing.T) {
	release := make(chan struct{})
	stall := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
				select { // a registry that never finishes sending a blob
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	reg := startRegistry(t, stall)
	t.Cleanup(func() { close(release) })
	reg.push(t, "test/slow:1", simpleImage(t, "slow"))
	s := newTestService(t, t.TempDir(), nil)
	c := serveGRPC(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.host + "/test/slow:1"}})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("stalled pull: %v, want DeadlineExceeded", err)
	}
	if st := imageStatus(t, s, reg.host+"/test/slow:1"); st != nil {
		t.Fatalf("timed-out pull recorded an image: %v", st)
	}
}
