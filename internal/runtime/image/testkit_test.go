package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/registry"
)

// TestPullTestkitCatalogue pulls berth's own test images (busybox with
// hard-linked applets, Docker media types, whiteouts and an opaque
// directory, a multi-arch index) by their short names, which normalise to
// docker.io and reach the test registry through a docker.io mirror.
func TestPullTestkitCatalogue(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Overlayfs, hostcheck.BusyboxStatic, hostcheck.Gcc)
	ctx := context.Background()
	set, err := images.Catalogue(ctx, images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := registry.Start(t)
	registry.Push(t, host, set)
	s := newTestService(t, t.TempDir(), func(c *Config) {
		c.Mirrors = map[string][]string{"docker.io": {"http://" + host}}
	})
	for _, ref := range set.Names() {
		pull(t, s, ref)
	}

	mount := func(ref, container string) string {
		t.Helper()
		rootfs, err := s.PrepareRootfs(ctx, ref, container, RootfsOptions{})
		if err != nil {
			t.Fatalf("PrepareRootfs %s: %v", ref, err)
		}
		t.Cleanup(func() { s.RemoveRootfs(ctx, container) })
		return rootfs
	}

	layered := mount(images.Layered, "layered")
	for p, want := range images.LayeredPresent {
		if got, err := os.ReadFile(filepath.Join(layered, p)); err != nil || string(got) != want {
			t.Errorf("layered %s = %q, %v; want %q", p, got, err, want)
		}
	}
	for _, p := range images.LayeredAbsent {
		if _, err := os.Lstat(filepath.Join(layered, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("layered %s should be deleted by an upper layer: %v", p, err)
		}
	}

	multi := mount(images.MultiArch, "multiarch")
	if _, err := os.Stat(filepath.Join(multi, "arch")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("multi-arch index resolved to the arm64 image (has /arch): %v", err)
	}
	if _, err := os.Stat(filepath.Join(multi, "bin", "busybox")); err != nil {
		t.Errorf("multi-arch index did not resolve to the amd64 busybox: %v", err)
	}

	docker := mount(images.BusyboxDocker, "docker")
	sh, err1 := os.Stat(filepath.Join(docker, "bin", "sh"))
	bb, err2 := os.Stat(filepath.Join(docker, "bin", "busybox"))
	if err1 != nil || err2 != nil || !os.SameFile(sh, bb) {
		t.Errorf("busybox applets should be hard links of /bin/busybox: %v %v", err1, err2)
	}
}

// TestPullCritestImagesUnderTheirOwnNames pulls every image critest v1.37.0
// asks for under its upstream name, each registry host mirrored to the test
// registry as `berth runtime --registry-mirror` will be under critest, and
// checks what critest's image specs check.
func TestPullCritestImagesUnderTheirOwnNames(t *testing.T) {
	hostcheck.Require(t, hostcheck.Gcc)
	ctx := context.Background()
	tools, err := hostcheck.ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	debianBusybox, err := images.FetchDebianBusybox(ctx, filepath.Join(tools, "debian-busybox"))
	if err != nil {
		t.Fatalf("Debian busybox (apt-get download busybox): %v", err)
	}
	set, err := images.CritestCatalogue(ctx, images.CritestOptions{DebianBusybox: debianBusybox})
	if err != nil {
		t.Fatal(err)
	}
	host := registry.Start(t)
	registry.Push(t, host, set)
	mirrors := map[string][]string{}
	for _, h := range images.CritestRegistryHosts {
		mirrors[h] = []string{"http://" + host}
	}
	s := newTestService(t, t.TempDir(), func(c *Config) { c.Mirrors = mirrors })

	ids := map[string]string{}
	for _, ref := range set.Names() {
		ids[ref] = pull(t, s, ref)
		st := imageStatus(t, s, ref)
		if st == nil || !slices.Contains(st.RepoTags, ref) {
			t.Errorf("%s: status %v does not carry its upstream name", ref, st)
		}
	}
	if ids["registry.k8s.io/pause:3.9"] != ids["k8s.gcr.io/pause:3.9"] {
		t.Errorf("the two pause names should be one image: %s vs %s", ids["registry.k8s.io/pause:3.9"], ids["k8s.gcr.io/pause:3.9"])
	}
	tags := imageStatus(t, s, "gcr.io/k8s-staging-cri-tools/test-image-tags:1")
	want := []string{"gcr.io/k8s-staging-cri-tools/test-image-tags:1", "gcr.io/k8s-staging-cri-tools/test-image-tags:2", "gcr.io/k8s-staging-cri-tools/test-image-tags:3"}
	if tags == nil || !slices.Equal(tags.RepoTags, want) {
		t.Errorf("test-image-tags: %v, want one image tagged %v", tags, want)
	}
	for ref, user := range map[string]struct {
		uid      int64
		username string
	}{
		"gcr.io/k8s-staging-cri-tools/test-image-user-uid:latest":            {1002, ""},
		"gcr.io/k8s-staging-cri-tools/test-image-user-username:latest":       {0, "www-data"},
		"gcr.io/k8s-staging-cri-tools/test-image-user-uid-group:latest":      {1003, ""},
		"gcr.io/k8s-staging-cri-tools/test-image-user-username-group:latest": {0, "www-data"},
	} {
		st := imageStatus(t, s, ref)
		if st == nil || st.GetUid().GetValue() != user.uid || st.Username != user.username {
			t.Errorf("%s: uid %v username %q, want %d %q", ref, st.GetUid(), st.GetUsername(), user.uid, user.username)
		}
	}
}
