package images

import (
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Epoch is the fixed time stamped on every file, layer history and image
// config, so that digests are reproducible.
var Epoch = time.Unix(0, 0).UTC()

// Format selects the manifest, config and layer media types of an image.
type Format int

const (
	// OCI uses application/vnd.oci.image.* media types.
	OCI Format = iota
	// Docker uses Docker v2 schema 2 media types.
	Docker
)

func (f Format) manifest() types.MediaType {
	if f == Docker {
		return types.DockerManifestSchema2
	}
	return types.OCIManifestSchema1
}

func (f Format) config() types.MediaType {
	if f == Docker {
		return types.DockerConfigJSON
	}
	return types.OCIConfigJSON
}

func (f Format) layer() types.MediaType {
	if f == Docker {
		return types.DockerLayer
	}
	return types.OCILayer
}

// Platform is the default (and, except in the multi-arch index, only) platform.
var Platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// spec describes an image to assemble: layers bottom-up and its run config.
type spec struct {
	format   Format
	platform v1.Platform
	layers   []layerSpec
	config   v1.Config
}

type layerSpec struct {
	createdBy string // recorded in the image history
	entries   []Entry
	// built memoizes the layer per format when set (see sharedLayer): a base
	// layer shared by many images is then compressed once, not per image.
	// Not safe for concurrent builds; each catalogue builds sequentially.
	built map[Format]v1.Layer
}

// sharedLayer is a layerSpec whose built layer is reused by every image
// that includes it.
func sharedLayer(createdBy string, entries []Entry) layerSpec {
	return layerSpec{createdBy: createdBy, entries: entries, built: map[Format]v1.Layer{}}
}

func (ls layerSpec) layer(f Format) (v1.Layer, error) {
	if l, ok := ls.built[f]; ok {
		return l, nil
	}
	l, err := newLayer(ls.entries, f.layer())
	if err != nil {
		return nil, err
	}
	if ls.built != nil {
		ls.built[f] = l
	}
	return l, nil
}

// build assembles s into an image with fixed timestamps.
func build(s spec) (v1.Image, error) {
	platform := s.platform
	if platform.OS == "" {
		platform = Platform
	}
	cfg := s.config
	if len(cfg.Env) == 0 {
		cfg.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, s.format.manifest()), s.format.config())
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: platform.Architecture,
		OS:           platform.OS,
		Variant:      platform.Variant,
		Created:      v1.Time{Time: Epoch},
		Config:       cfg,
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	adds := make([]mutate.Addendum, 0, len(s.layers))
	for _, ls := range s.layers {
		l, err := ls.layer(s.format)
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", ls.createdBy, err)
		}
		adds = append(adds, mutate.Addendum{
			Layer:     l,
			MediaType: s.format.layer(),
			History:   v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: ls.createdBy, Comment: "berth testkit"},
		})
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	return img, nil
}

// index assembles a multi-platform OCI image index of imgs.
func index(imgs ...v1.Image) (v1.ImageIndex, error) {
	adds := make([]mutate.IndexAddendum, 0, len(imgs))
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("index: config: %w", err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: cf.Platform()},
		})
	}
	return mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex), nil
}
