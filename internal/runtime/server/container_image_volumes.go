package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/berth/berth/internal/runtime/image"
)

// prepareImageVolumes mounts, read-only, the image of every mount that names
// one (Kubernetes image volumes). It returns the config for the spec
// generator, where those mounts are plain bind mounts of the prepared
// directories, and records each image's ref in c.Config's mounts for
// ContainerStatus. opts say how (read-only, and as for the container's root
// filesystem in a user-namespaced pod). Each volume is undone through undo.
func (s *Server) prepareImageVolumes(ctx context.Context, c *container, opts image.RootfsOptions, undo *undoStack) (*ContainerConfig, error) {
	if !hasImageVolumes(c.Config) {
		return c.Config, nil
	}
	forSpec := proto.Clone(c.Config).(*ContainerConfig)
	for i, m := range c.Config.GetMounts() {
		if m.GetImage().GetImage() == "" {
			continue
		}
		if !m.GetReadonly() {
			return nil, invalid("image volume at %s must be read-only", m.GetContainerPath())
		}
		img, err := s.cfg.Images.Resolve(ctx, m.GetImage().GetImage())
		if err != nil {
			return nil, err
		}
		volID := fmt.Sprintf("%s-vol%d", c.ID, i)
		root, err := s.cfg.Images.PrepareRootfs(ctx, img.ID, volID, opts)
		if err != nil {
			return nil, fmt.Errorf("image volume %s: %w", m.GetContainerPath(), err)
		}
		c.ImageVolumes = append(c.ImageVolumes, volID)
		undo.add("remove image volume", func(ctx context.Context) error { return s.cfg.Images.RemoveRootfs(ctx, volID) })
		hostPath, err := imageSubPath(root, m.GetImageSubPath())
		if err != nil {
			return nil, err
		}
		m.Image.ImageRef = img.ID
		forSpec.Mounts[i].HostPath = hostPath
		forSpec.Mounts[i].Image = nil
		// Its files are the pod's already (opts idmaps the image's layers).
		forSpec.Mounts[i].UidMappings, forSpec.Mounts[i].GidMappings = nil, nil
	}
	return forSpec, nil
}

func hasImageVolumes(cfg *ContainerConfig) bool {
	for _, m := range cfg.GetMounts() {
		if m.GetImage().GetImage() != "" {
			return true
		}
	}
	return false
}

// imageSubPath resolves sub inside an image volume's root, refusing any
// path that leaves it, and requires it to exist.
func imageSubPath(root, sub string) (string, error) {
	if sub == "" {
		return root, nil
	}
	if filepath.IsAbs(sub) || slices.Contains(strings.Split(sub, "/"), "..") {
		return "", invalid("image volume subPath %q must be relative and stay inside the image", sub)
	}
	clean := filepath.Clean("/" + sub)
	path := filepath.Join(root, clean)
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", status.Errorf(codes.InvalidArgument, "image volume subPath %q: %v", sub, err)
	}
	if resolved != root && !strings.HasPrefix(resolved, root+string(os.PathSeparator)) {
		return "", invalid("image volume subPath %q leaves the image", sub)
	}
	return resolved, nil
}

// removeImageVolumes releases every image volume of a container.
func (s *Server) removeImageVolumes(ctx context.Context, c container) error {
	for _, id := range c.ImageVolumes {
		if err := s.cfg.Images.RemoveRootfs(ctx, id); err != nil {
			return fmt.Errorf("remove image volume %s: %w", id, err)
		}
	}
	return nil
}
