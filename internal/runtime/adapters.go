package runtime

import (
	"context"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/image"
	"github.com/berth/berth/internal/runtime/pause"
	"github.com/berth/berth/internal/runtime/server"
	"github.com/berth/berth/internal/runtime/spec"
)

// imageAdapter presents the image service as the server's Images.
type imageAdapter struct{ svc *image.Service }

func convertImage(info image.ImageInfo) server.Image {
	return server.Image{ID: info.ID, RepoTags: info.RepoTags, RepoDigests: info.RepoDigests, Config: info.Config}
}

func (a imageAdapter) Resolve(ctx context.Context, ref string) (server.Image, error) {
	info, err := a.svc.Resolve(ctx, ref)
	if err != nil {
		return server.Image{}, err
	}
	return convertImage(info), nil
}

// Ensure pulls the image if it is not present, as containerd does for its
// sandbox image.
func (a imageAdapter) Ensure(ctx context.Context, ref string) (server.Image, error) {
	img, err := a.Resolve(ctx, ref)
	if status.Code(err) != codes.NotFound {
		return img, err
	}
	if _, err := a.svc.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		return server.Image{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	return a.Resolve(ctx, ref)
}

func (a imageAdapter) PrepareRootfs(ctx context.Context, imageID, containerID string, opts image.RootfsOptions) (string, error) {
	return a.svc.PrepareRootfs(ctx, imageID, containerID, opts)
}

func (a imageAdapter) RemoveRootfs(ctx context.Context, containerID string) error {
	return a.svc.RemoveRootfs(ctx, containerID)
}

func (a imageAdapter) RecoverRootfs(ctx context.Context) (server.RootfsRecovery, error) {
	res, err := a.svc.Recover(ctx)
	if err != nil {
		return server.RootfsRecovery{}, err
	}
	out := server.RootfsRecovery{Failed: res.Failed}
	for id := range res.Uses {
		out.InUse = append(out.InUse, id)
	}
	return out, nil
}

// specAdapter presents the spec package as the server's Specs.
type specAdapter struct{ host spec.Host }

func (a specAdapter) Pause(ctx context.Context, in spec.PauseInput) (*pause.Process, error) {
	in.Host = a.host
	return spec.GeneratePause(ctx, in)
}

func (a specAdapter) Container(ctx context.Context, in spec.Input) (*specs.Spec, error) {
	in.Host = a.host
	return spec.Generate(ctx, in)
}

func (specAdapter) ValidateSandbox(cfg *server.PodSandboxConfig) error {
	return spec.ValidateSandbox(cfg)
}

// WritableLayer implements server.WritableLayers.
func (a imageAdapter) WritableLayer(containerID string) string {
	return a.svc.WritableLayer(containerID)
}
