package image

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemoveImage implements the CRI: remove the image named by ID, tag or
// digest, with all its tags (what critest expects of removal by one tag).
// Removing an absent image succeeds; an image a container uses is refused
// with FailedPrecondition.
func (s *Service) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref := req.GetImage().GetImage()
	if strings.TrimSpace(ref) == "" {
		return nil, status.Error(codes.InvalidArgument, "image reference is empty")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var removed *imageRecord
	err := s.meta.update(func(md *metadata) error {
		rec, err := md.find(ref)
		if err != nil || rec == nil {
			return err
		}
		if users := s.usersOfLocked(rec.ID); len(users) > 0 {
			return status.Errorf(codes.FailedPrecondition, "image %s is in use by containers %v", describeRecord(rec), users)
		}
		delete(md.Images, rec.ID)
		removed = rec
		return nil
	})
	if err != nil {
		return nil, err
	}
	if removed == nil {
		return &runtimeapi.RemoveImageResponse{}, nil
	}
	s.log.InfoContext(ctx, "image removed", "id", removed.ID, "tags", removed.RepoTags)
	if err := s.collectGarbageLocked(); err != nil {
		// The image is gone from the index; leftovers are retried at the
		// next removal or start.
		s.log.WarnContext(ctx, "image garbage collection incomplete", "err", err)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// collectGarbageLocked deletes blobs and snapshots no image refers to.
// Callers hold s.mu.
func (s *Service) collectGarbageLocked() error {
	keepSnapshots := map[string]bool{}
	keepBlobs := map[string]bool{}
	s.meta.view(func(md *metadata) {
		for _, rec := range md.Images {
			for _, c := range rec.ChainIDs {
				keepSnapshots[c] = true
			}
			for _, b := range rec.Blobs {
				keepBlobs[b] = true
			}
		}
	})
	errs := []error{s.layers.prune(keepSnapshots, &s.pins)}
	stored, err := s.blobs.list()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, d := range stored {
		if keepBlobs[d] {
			continue
		}
		h, err := v1.NewHash(d)
		if err != nil {
			errs = append(errs, fmt.Errorf("blob %s: %w", d, err))
			continue
		}
		errs = append(errs, s.pins.unlessPinned(d, func() error { return s.blobs.Remove(h) }))
	}
	return errors.Join(errs...)
}
