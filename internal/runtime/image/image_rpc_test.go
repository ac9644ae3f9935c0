package image

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestLayersAreSharedBetweenImages(t *testing.T) {
	reg := startRegistry(t, nil)
	base := layer(t, dir("bin"), file("bin/sh", "shell"))
	imgA := testImage(t, "", base, layer(t, file("a", "a")))
	imgB := testImage(t, "", base, layer(t, file("b", "b")))
	reg.push(t, "test/a:1", imgA)
	reg.push(t, "test/b:1", imgB)
	root := t.TempDir()
	s := newTestService(t, root, nil)
	idA := pull(t, s, reg.host+"/test/a:1")
	baseDigest := mustDigest(t, base.Digest)
	reg.reset()
	idB := pull(t, s, reg.host+"/test/b:1")
	if n := reg.count("GET", "/v2/test/b/blobs/"+baseDigest); n != 0 {
		t.Fatalf("shared base layer downloaded again (%d times)", n)
	}
	snapshots := func() int {
		entries, err := os.ReadDir(filepath.Join(root, "snapshots"))
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	if n := snapshots(); n != 3 {
		t.Fatalf("%d snapshots for two images sharing a base, want 3", n)
	}
	ctx := context.Background()
	if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: idA}}); err != nil {
		t.Fatal(err)
	}
	if n := snapshots(); n != 2 {
		t.Fatalf("%d snapshots after removing one image, want 2 (the shared base stays)", n)
	}
	if !s.blobs.Has(mustHash(t, baseDigest)) {
		t.Fatal("shared base blob was collected while image B uses it")
	}
	if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: idB}}); err != nil {
		t.Fatal(err)
	}
	if n := snapshots(); n != 0 {
		t.Fatalf("%d snapshots after removing every image, want 0", n)
	}
	blobs, _ := s.blobs.list()
	if len(blobs) != 0 {
		t.Fatalf("blobs left after removing every image: %v", blobs)
	}
}

func TestRemoveByOneTagRemovesAllTags(t *testing.T) {
	reg := startRegistry(t, nil)
	img := simpleImage(t, "tags")
	for _, tag := range []string{"1", "2", "3"} {
		reg.push(t, "test/tags:"+tag, img)
	}
	s := newTestService(t, t.TempDir(), nil)
	var refs []string
	for _, tag := range []string{"1", "2", "3"} {
		refs = append(refs, reg.host+"/test/tags:"+tag)
		pull(t, s, refs[len(refs)-1])
	}
	ctx := context.Background()
	list, err := s.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Images) != 1 || !slices.Equal(list.Images[0].RepoTags, refs) {
		t.Fatalf("ListImages = %v, want one image tagged %v", list.Images, refs)
	}
	if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: refs[1]}}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		if st := imageStatus(t, s, ref); st != nil {
			t.Fatalf("%s still present after removing by another tag", ref)
		}
	}
	// Removing an image that is gone is not an error.
	if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: refs[0]}}); err != nil {
		t.Fatalf("RemoveImage of an absent image: %v", err)
	}
}

func TestRepullMovesTagToNewImage(t *testing.T) {
	reg := startRegistry(t, nil)
	s := newTestService(t, t.TempDir(), nil)
	ref := reg.host + "/test/moving:latest"
	reg.push(t, "test/moving:latest", simpleImage(t, "old"))
	oldID := pull(t, s, ref)
	reg.push(t, "test/moving:latest", simpleImage(t, "new"))
	newID := pull(t, s, ref)
	if oldID == newID {
		t.Fatal("different images got one ID")
	}
	if st := imageStatus(t, s, ref); st == nil || st.Id != newID {
		t.Fatalf("tag points at %v, want %s", st, newID)
	}
	old := imageStatus(t, s, oldID)
	if old == nil || len(old.RepoTags) != 0 || len(old.RepoDigests) != 1 {
		t.Fatalf("old image after its tag moved: %v (want kept, untagged, reachable by digest)", old)
	}
}

func TestListImagesFilter(t *testing.T) {
	reg := startRegistry(t, nil)
	reg.push(t, "test/one:1", simpleImage(t, "one"))
	reg.push(t, "test/two:1", simpleImage(t, "two"))
	s := newTestService(t, t.TempDir(), nil)
	pull(t, s, reg.host+"/test/one:1")
	two := pull(t, s, reg.host+"/test/two:1")
	ctx := context.Background()
	all, err := s.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(all.Images) != 2 {
		t.Fatalf("ListImages: %v %v", all, err)
	}
	only, err := s.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: reg.host + "/test/two:1"}}})
	if err != nil || len(only.Images) != 1 || only.Images[0].Id != two {
		t.Fatalf("filtered ListImages: %v %v", only, err)
	}
	none, err := s.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: reg.host + "/test/three:1"}}})
	if err != nil || len(none.Images) != 0 {
		t.Fatalf("ListImages filtered on an absent image: %v %v", none, err)
	}
}

func TestImageUserFromConfig(t *testing.T) {
	reg := startRegistry(t, nil)
	s := newTestService(t, t.TempDir(), nil)
	cases := []struct {
		user     string
		uid      *int64
		username string
	}{
		{"", nil, ""},
		{"1002", ptr(int64(1002)), ""},
		{"www-data", nil, "www-data"},
		{"1003:1004", ptr(int64(1003)), ""},
		{"www-data:1004", nil, "www-data"},
	}
	for i, c := range cases {
		repo := "test/user" + string(rune('a'+i)) + ":1"
		reg.push(t, repo, testImage(t, c.user, layer(t, file("marker", c.user))))
		pull(t, s, reg.host+"/"+repo)
		st := imageStatus(t, s, reg.host+"/"+repo)
		gotUID := st.GetUid()
		if (c.uid == nil) != (gotUID == nil) || (c.uid != nil && gotUID.Value != *c.uid) || st.Username != c.username {
			t.Errorf("USER %q: uid %v username %q, want %v %q", c.user, gotUID, st.Username, c.uid, c.username)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestImageStatusVerbose(t *testing.T) {
	reg := startRegistry(t, nil)
	reg.push(t, "test/verbose:1", testImage(t, "1000", layer(t, file("f", "verbose"))))
	s := newTestService(t, t.TempDir(), nil)
	id := pull(t, s, reg.host+"/test/verbose:1")
	resp, err := s.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: id}, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		ChainID   string `json:"chainID"`
		ImageSpec struct {
			Config struct{ User string } `json:"config"`
		} `json:"imageSpec"`
	}
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil {
		t.Fatalf("verbose info %q: %v", resp.Info["info"], err)
	}
	if info.ChainID == "" || info.ImageSpec.Config.User != "1000" {
		t.Fatalf("verbose info = %+v", info)
	}
}

func TestBadReferencesAreInvalidArgument(t *testing.T) {
	s := newTestService(t, t.TempDir(), nil)
	ctx := context.Background()
	for _, ref := range []string{"", "  ", "library/UPPER", "bad ref with spaces", "busybox@sha256:short", "-leading"} {
		_, err := s.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("PullImage(%q): %v, want InvalidArgument", ref, err)
		}
		_, err = s.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("ImageStatus(%q): %v, want InvalidArgument", ref, err)
		}
		_, err = s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("RemoveImage(%q): %v, want InvalidArgument", ref, err)
		}
	}
	for _, req := range []*runtimeapi.PullImageRequest{nil, {}, {Image: &runtimeapi.ImageSpec{}}} {
		if _, err := s.PullImage(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("PullImage(%v): %v, want InvalidArgument", req, err)
		}
	}
	for _, absent := range []string{"example.com/absent:1", strings.Repeat("ab", 32), "sha256:" + strings.Repeat("ab", 32)} {
		if _, err := s.Resolve(ctx, absent); status.Code(err) != codes.NotFound {
			t.Errorf("Resolve(%q) of an absent image: %v, want NotFound", absent, err)
		}
		resp, err := s.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: absent}})
		if err != nil || resp.Image != nil {
			t.Errorf("ImageStatus(%q) of an absent image: %v, %v; want an empty answer", absent, resp, err)
		}
	}
}

func TestImageFsInfoReportsStoreUsage(t *testing.T) {
	reg := startRegistry(t, nil)
	reg.push(t, "test/fs:1", testImage(t, "", layer(t, file("big", string(make([]byte, 64<<10))))))
	root := t.TempDir()
	s := newTestService(t, root, nil)
	ctx := context.Background()
	before, err := s.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	pull(t, s, reg.host+"/test/fs:1")
	after, err := s.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, a := before.ImageFilesystems[0], after.ImageFilesystems[0]
	if a.UsedBytes.Value < b.UsedBytes.Value+64<<10 || a.InodesUsed.Value <= b.InodesUsed.Value {
		t.Fatalf("usage before %d bytes %d inodes, after %d %d: want at least 64 KiB and more inodes",
			b.UsedBytes.Value, b.InodesUsed.Value, a.UsedBytes.Value, a.InodesUsed.Value)
	}
	if _, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.host + "/test/fs:1"}}); err != nil {
		t.Fatal(err)
	}
	removed, err := s.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r := removed.ImageFilesystems[0]; r.UsedBytes.Value+64<<10 > a.UsedBytes.Value {
		t.Fatalf("usage %d bytes after removing the image, %d before: want at least 64 KiB less", r.UsedBytes.Value, a.UsedBytes.Value)
	}
	mp := a.FsId.Mountpoint
	if mp == "" || !isAncestor(mp, root) {
		t.Fatalf("mountpoint %q is not an ancestor of the store %q", mp, root)
	}
}

func isAncestor(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (rel == "." || rel[:min(3, len(rel))] != "../")
}

func TestPinnedImagesAreReported(t *testing.T) {
	reg := startRegistry(t, nil)
	reg.push(t, "pause:3.9", simpleImage(t, "pause"))
	reg.push(t, "app:1", simpleImage(t, "app"))
	s := newTestService(t, t.TempDir(), func(c *Config) {
		c.Mirrors = map[string][]string{"registry.k8s.io": {"http://" + reg.host}}
		c.Pinned = []string{"registry.k8s.io/pause:3.9"}
	})
	pull(t, s, "registry.k8s.io/pause:3.9")
	pull(t, s, reg.host+"/app:1")
	if st := imageStatus(t, s, "registry.k8s.io/pause:3.9"); st == nil || !st.Pinned {
		t.Fatalf("pause image not pinned: %v", st)
	}
	if st := imageStatus(t, s, reg.host+"/app:1"); st == nil || st.Pinned {
		t.Fatalf("ordinary image pinned: %v", st)
	}
}
