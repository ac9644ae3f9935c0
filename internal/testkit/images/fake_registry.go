package images

import (
	"fmt"
	"io"
	"maps"
	"path"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// fakeRegistryDir is where agnhost's fake-registry-server serves images
// from: upstream's agnhost image carries pause:3.10.2 there under the tag
// "testing" (test/images/agnhost/fakeregistryserver/images.txt), which the
// node tests' private registry serves as localhost:5000/pause:testing.
const fakeRegistryDir = "/var/registry"

// fakeRegistryEntries lays img out as upstream's prepare_registry.sh lays
// out its images for the fake registry server: NAME/manifests/TAG holds the
// manifest's digest, and each manifest and blob is at
// {manifests,blobs}/sha256/XX/HASH/data.
func fakeRegistryEntries(name, tag string, img v1.Image) ([]Entry, error) {
	files, err := registryFiles(path.Join(fakeRegistryDir, name), tag, img)
	if err != nil {
		return nil, fmt.Errorf("fake registry %s:%s: %w", name, tag, err)
	}
	paths := slices.Sorted(maps.Keys(files))
	have := map[string]bool{"/": true}
	for _, d := range baseDirs {
		have[path.Clean(d.Header.Name)] = true
	}
	var entries []Entry
	for _, d := range parentDirs(paths, have) {
		entries = append(entries, Dir(d, 0o755))
	}
	for _, p := range paths {
		entries = append(entries, File(p, 0o644, files[p]))
	}
	return entries, nil
}

// registryFiles are img's tag file, manifest, config and layers under dir,
// by path.
func registryFiles(dir, tag string, img v1.Image) (map[string][]byte, error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, err
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		path.Join(dir, "manifests", tag):                  []byte(digest.String() + "\n"),
		digestPath(path.Join(dir, "manifests"), digest):   manifest,
		digestPath(path.Join(dir, "blobs"), configDigest): config,
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		if files[digestPath(path.Join(dir, "blobs"), d)], err = compressed(l); err != nil {
			return nil, fmt.Errorf("layer %s: %w", d, err)
		}
	}
	return files, nil
}

// digestPath is prepare_registry.sh's digest_to_path.
func digestPath(base string, d v1.Hash) string {
	return path.Join(base, d.Algorithm, d.Hex[:2], d.Hex, "data")
}

func compressed(l v1.Layer) ([]byte, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
