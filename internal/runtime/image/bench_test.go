package image

import (
	"context"
	"crypto/rand"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkPullSmallImage pulls a 2.5 MB, two-layer image from a loopback
// registry into an empty store each iteration (download, verify, unpack,
// record), the figure critest -benchmark's PullImage measures.
func BenchmarkPullSmallImage(b *testing.B) {
	reg := startRegistry(b, nil)
	noise := make([]byte, 2<<20+512<<10) // incompressible, so 2.5 MB on the wire
	if _, err := rand.Read(noise); err != nil {
		b.Fatal(err)
	}
	img := testImage(b, "",
		layer(b, dir("bin"), file("bin/busybox", string(noise))),
		layer(b, dir("etc"), file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")))
	reg.push(b, "bench/small:1", img)
	ref := reg.host + "/bench/small:1"
	size := int64(0)
	for _, l := range mustLayers(b, img) {
		n, _ := l.Size()
		size += n
	}
	b.SetBytes(size)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		s := newTestService(b, b.TempDir(), nil)
		b.StartTimer()
		if _, err := s.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
			b.Fatal(err)
		}
	}
}
