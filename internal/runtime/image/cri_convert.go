package image

import (
	"encoding/json"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// toCRIImage converts a record and its config to the CRI Image message.
// pinned says whether the kubelet must never garbage-collect the image.
func toCRIImage(rec *imageRecord, cfg *v1.ConfigFile, pinned bool) *runtimeapi.Image {
	img := &runtimeapi.Image{
		Pinned:      pinned,
		Id:          rec.ID,
		RepoTags:    rec.RepoTags,
		RepoDigests: rec.RepoDigests,
		Size:        rec.Size,
		Spec:        &runtimeapi.ImageSpec{Image: rec.ID},
	}
	if cfg != nil {
		uid, username := imageUser(cfg.Config.User)
		if uid != nil {
			img.Uid = &runtimeapi.Int64Value{Value: *uid}
		}
		img.Username = username
	}
	return img
}

// verboseInfo is ImageStatus's verbose "info" entry, shaped like containerd's.
func verboseInfo(rec *imageRecord, cfg *v1.ConfigFile) (map[string]string, error) {
	info := struct {
		ChainID        string         `json:"chainID"`
		ManifestDigest string         `json:"manifestDigest"`
		ImageSpec      *v1.ConfigFile `json:"imageSpec"`
	}{ManifestDigest: rec.ManifestDigest, ImageSpec: cfg}
	if n := len(rec.ChainIDs); n > 0 {
		info.ChainID = rec.ChainIDs[n-1]
	}
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	return map[string]string{"info": string(raw)}, nil
}
