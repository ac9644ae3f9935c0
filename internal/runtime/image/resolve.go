package image

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ImageInfo is what the runtime service needs to know about a local image.
type ImageInfo struct {
	ID          string // config digest, "sha256:..."
	RepoTags    []string
	RepoDigests []string
	Size        uint64
	Config      *v1.ConfigFile
}

// Resolve finds a local image by ID, unique ID prefix, tag or digest. It
// returns gRPC NotFound if there is none, InvalidArgument for a bad reference.
func (s *Service) Resolve(ctx context.Context, ref string) (ImageInfo, error) {
	rec, err := s.lookup(ref)
	if err != nil {
		return ImageInfo{}, err
	}
	if rec == nil {
		return ImageInfo{}, notFound(ref)
	}
	cfg, err := s.configOf(rec)
	if err != nil {
		return ImageInfo{}, err
	}
	return ImageInfo{
		ID:          rec.ID,
		RepoTags:    slices.Clone(rec.RepoTags),
		RepoDigests: slices.Clone(rec.RepoDigests),
		Size:        rec.Size,
		Config:      cfg,
	}, nil
}

// lookup returns a copy of the record ref names, or nil.
func (s *Service) lookup(ref string) (*imageRecord, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, status.Error(codes.InvalidArgument, "image reference is empty")
	}
	var rec *imageRecord
	var err error
	s.meta.view(func(md *metadata) {
		var found *imageRecord
		found, err = md.find(ref)
		if found != nil {
			c := *found
			rec = &c
		}
	})
	return rec, err
}

func (s *Service) configOf(rec *imageRecord) (*v1.ConfigFile, error) {
	h, err := v1.NewHash(rec.ID)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "image %s: %v", rec.ID, err)
	}
	raw, err := s.blobs.ReadAll(h)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "image %s: read config: %v", rec.ID, err)
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "image %s: parse config: %v", rec.ID, err)
	}
	return cfg, nil
}

// imageUser splits the config's USER as containerd does: a numeric user
// (before any ":group") is a UID, anything else a user name.
func imageUser(user string) (uid *int64, username string) {
	if user == "" {
		return nil, ""
	}
	u, _, _ := strings.Cut(user, ":")
	if n, err := strconv.ParseInt(u, 10, 64); err == nil {
		return &n, ""
	}
	return nil, u
}

func describeRecord(rec *imageRecord) string {
	return fmt.Sprintf("%s (tags %v)", rec.ID, rec.RepoTags)
}
