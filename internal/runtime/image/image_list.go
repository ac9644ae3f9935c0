package image

import (
	"context"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListImages implements the CRI: every image, or only the one the filter names.
func (s *Service) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	var recs []*imageRecord
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		rec, err := s.lookup(ref)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			recs = append(recs, rec)
		}
	} else {
		s.meta.view(func(md *metadata) {
			for _, rec := range md.Images {
				c := *rec
				recs = append(recs, &c)
			}
		})
	}
	slices.SortFunc(recs, func(a, b *imageRecord) int { return strings.Compare(a.ID, b.ID) })
	resp := &runtimeapi.ListImagesResponse{}
	for _, rec := range recs {
		cfg, err := s.configOf(rec)
		if err != nil {
			// A listing must not fail because one image is damaged; its
			// status call reports the damage.
			s.log.WarnContext(ctx, "image config unreadable", "image", rec.ID, "err", err)
		}
		resp.Images = append(resp.Images, toCRIImage(rec, cfg, s.isPinned(rec)))
	}
	return resp, nil
}
