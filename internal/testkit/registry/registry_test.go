package registry

import (
	"bytes"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
)

func catalogue(t *testing.T) images.Set {
	t.Helper()
	hostcheck.Require(t, hostcheck.BusyboxStatic, hostcheck.Gcc)
	set, err := images.Catalogue(t.Context(), images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestPushedImagesPullBackIdentical pushes the catalogue into a real
// in-process registry and pulls every image by tag and by digest: manifest,
// config and each layer (digest, diff ID, media type, bytes) must match.
func TestPushedImagesPullBackIdentical(t *testing.T) {
	set := catalogue(t)
	host := Start(t)
	Push(t, host, set)

	for _, ref := range set.Names() {
		a := set[ref]
		if a.Image == nil {
			continue
		}
		tagRef, err := Reference(host, ref)
		if err != nil {
			t.Fatal(err)
		}
		byTag, err := remote.Image(tagRef, remote.WithContext(t.Context()))
		if err != nil {
			t.Fatalf("%s: pull by tag: %v", ref, err)
		}
		assertSameImage(t, ref+" by tag", a.Image, byTag)

		d, _ := a.Image.Digest()
		digestRef, err := Reference(host, tagRef.Context().RepositoryStr()+"@"+d.String())
		if err != nil {
			t.Fatal(err)
		}
		byDigest, err := remote.Image(digestRef, remote.WithContext(t.Context()))
		if err != nil {
			t.Fatalf("%s: pull by digest: %v", ref, err)
		}
		assertSameImage(t, ref+" by digest", a.Image, byDigest)
	}
}

func assertSameImage(t *testing.T, what string, want, got v1.Image) {
	t.Helper()
	wantM, _ := want.RawManifest()
	gotM, err := got.RawManifest()
	if err != nil || !bytes.Equal(wantM, gotM) {
		t.Fatalf("%s: manifest differs (%v)", what, err)
	}
	wantC, _ := want.RawConfigFile()
	gotC, err := got.RawConfigFile()
	if err != nil || !bytes.Equal(wantC, gotC) {
		t.Fatalf("%s: config differs (%v)", what, err)
	}
	wantL, _ := want.Layers()
	gotL, err := got.Layers()
	if err != nil || len(wantL) != len(gotL) {
		t.Fatalf("%s: %d layers pulled (%v), want %d", what, len(gotL), err, len(wantL))
	}
	for i := range wantL {
		for _, f := range []func(v1.Layer) (string, error){layerDigest, layerDiffID, layerMediaType} {
			w, _ := f(wantL[i])
			g, err := f(gotL[i])
			if err != nil || w != g {
				t.Errorf("%s: layer %d: got %q (%v), want %q", what, i, g, err, w)
			}
		}
	}
}

func layerDigest(l v1.Layer) (string, error) {
	h, err := l.Digest()
	return h.String(), err
}

// layerDiffID recomputes the diff ID from the pulled bytes (remote layers
// otherwise just echo the config's diff IDs).
func layerDiffID(l v1.Layer) (string, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h, _, err := v1.SHA256(rc)
	return h.String(), err
}

func layerMediaType(l v1.Layer) (string, error) {
	mt, err := l.MediaType()
	return string(mt), err
}

func TestPushedIndexKeepsBothPlatforms(t *testing.T) {
	set := catalogue(t)
	host := Start(t)
	Push(t, host, images.Set{images.MultiArch: set[images.MultiArch]})

	ref, err := Reference(host, images.MultiArch)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	wantD, _ := set[images.MultiArch].Index.Digest()
	if gotD, _ := idx.Digest(); gotD != wantD {
		t.Fatalf("index digest %s, want %s", gotD, wantD)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := remote.Image(ref, remote.WithContext(t.Context()), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
		if err != nil {
			t.Fatalf("pull linux/%s: %v", arch, err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != arch {
			t.Fatalf("linux/%s resolved to %v (%v)", arch, cf, err)
		}
	}
}

func TestPushRejectsEmptyArtifact(t *testing.T) {
	host := Start(t)
	err := PushContext(t.Context(), host, images.Set{"berth-test/empty:1": {}})
	if err == nil {
		t.Fatal("pushing an artifact with neither image nor index succeeded")
	}
}
