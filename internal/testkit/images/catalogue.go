// Package images builds berth's test images offline, from the host's
// busybox and tiny static C programs, with go-containerregistry. Every file,
// layer and config carries a fixed timestamp, so the same inputs give the
// same digests on every run. Catalogue is berth's own set (busybox, a
// multi-layer image with whiteouts, non-root USER, ENTRYPOINT/CMD/ENV/WORKDIR,
// httpd, pause, Docker media types, a multi-arch index); CritestCatalogue is
// the set critest v1.37.0 asks for, under critest's own image names.
package images

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Artifact is what one reference names: exactly one of Image and Index.
type Artifact struct {
	Image v1.Image
	Index v1.ImageIndex
	About string // what the image is for
}

// Set maps references ("repository/path:tag", optionally with a registry
// host first) to what they name.
type Set map[string]Artifact

// Names returns the references in s, sorted.
func (s Set) Names() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RepositoryPath drops a leading registry host from ref, as a registry
// mirror does: "registry.k8s.io/pause:3.9" -> "pause:3.9",
// "berth-test/busybox:latest" -> unchanged. Like Docker's reference rules, the
// first component is a host when it has a '.' or ':' or is "localhost".
func RepositoryPath(ref string) string {
	first, rest, ok := strings.Cut(ref, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return rest
	}
	return ref
}

// References of berth's own test images (Catalogue).
const (
	// Busybox: one layer, busybox-static with applets as hard links; CMD ["sh"].
	Busybox = "berth-test/busybox:latest"
	// BusyboxDocker: the same root filesystem in Docker v2 schema 2 media types.
	BusyboxDocker = "berth-test/busybox-docker:latest"
	// Layered: busybox plus two layers exercising whiteouts and an opaque
	// directory; see LayeredPresent and LayeredAbsent.
	Layered = "berth-test/layered:latest"
	// NonRoot: busybox with USER 1000:1000 (user "app", home /home/app).
	NonRoot = "berth-test/nonroot:latest"
	// Entrypoint: ENTRYPOINT ["/bin/echo","entrypoint:"], CMD ["default-cmd"],
	// ENV GREETING=hello-from-image, WORKDIR /work. Its output is
	// "entrypoint: default-cmd".
	Entrypoint = "berth-test/entrypoint:latest"
	// Httpd: `busybox httpd -f -p 80 -h /www`; GET / returns HttpdIndex.
	Httpd = "berth-test/httpd:latest"
	// Pause: the static C pause as ENTRYPOINT, USER 65535:65535.
	Pause = "berth-test/pause:latest"
	// MultiArch: an OCI index of Busybox (linux/amd64) and a marker image
	// (linux/arm64) holding /arch = "arm64".
	MultiArch = "berth-test/multiarch:latest"
)

// HttpdIndex is the body the Httpd image serves on /.
const HttpdIndex = "berth test httpd\n"

// LayeredPresent maps files of the Layered image's merged root to their
// contents; LayeredAbsent lists paths its upper layers deleted.
var (
	LayeredPresent = map[string]string{
		"/data/keep.txt":   "kept from layer 1\n",
		"/data/layer3.txt": "added by layer 3\n",
		"/opaque/new.txt":  "only file after the opaque layer\n",
		"/etc/motd":        "rewritten by layer 3\n",
	}
	LayeredAbsent = []string{"/data/gone.txt", "/opaque/old1.txt", "/opaque/old2.txt"}
)

// Options configures Catalogue.
type Options struct {
	// Busybox is a statically linked busybox; default /bin/busybox (Debian's busybox-static).
	Busybox string
}

// Catalogue builds berth's own test images. It needs a static busybox and
// gcc with a static libc (for pause).
func Catalogue(ctx context.Context, opts Options) (Set, error) {
	bbPath := opts.Busybox
	if bbPath == "" {
		bbPath = "/bin/busybox"
	}
	bb, err := os.ReadFile(bbPath)
	if err != nil {
		return nil, fmt.Errorf("catalogue: read busybox: %w", err)
	}
	applets, err := appletList(ctx, bbPath)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	var progs programs
	pause, err := progs.get(ctx, "pause")
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	base := sharedLayer("busybox-static "+bbPath, busyboxRoot(bb, applets, nil))
	shell := v1.Config{Cmd: []string{"sh"}}

	set := Set{}
	var firstErr error
	add := func(ref, about string, s spec) v1.Image {
		img, err := build(s)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("catalogue: %s: %w", ref, err)
		}
		set[ref] = Artifact{Image: img, About: about}
		return img
	}

	busybox := add(Busybox, "busybox, one layer, OCI media types", spec{layers: []layerSpec{base}, config: shell})
	add(BusyboxDocker, "busybox, one layer, Docker v2 schema 2 media types", spec{format: Docker, layers: []layerSpec{base}, config: shell})
	add(Layered, "busybox plus layers with a whiteout and an opaque directory", spec{layers: layeredLayers(base), config: shell})
	add(NonRoot, "busybox running as USER 1000:1000", spec{layers: []layerSpec{base, {
		createdBy: "add user app (1000:1000)",
		entries: []Entry{
			File("/etc/passwd", 0o644, []byte(passwd+"app:x:1000:1000:app:/home/app:/bin/sh\n")),
			File("/etc/group", 0o644, []byte(group+"app:x:1000:\n")),
			Dir("/home/app", 0o755).Owned(1000, 1000),
		},
	}}, config: v1.Config{User: "1000:1000", Cmd: []string{"id"}}})
	add(Entrypoint, "ENTRYPOINT, CMD, ENV and WORKDIR set", spec{layers: []layerSpec{base, {
		createdBy: "WORKDIR /work", entries: []Entry{Dir("/work", 0o755)},
	}}, config: v1.Config{
		Entrypoint: []string{"/bin/echo", "entrypoint:"},
		Cmd:        []string{"default-cmd"},
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "GREETING=hello-from-image"},
		WorkingDir: "/work",
	}})
	add(Httpd, "busybox httpd on port 80 serving /www", spec{layers: []layerSpec{base, {
		createdBy: "add /www/index.html",
		entries:   []Entry{Dir("/www", 0o755), File("/www/index.html", 0o644, []byte(HttpdIndex))},
	}}, config: v1.Config{
		Cmd:          []string{"httpd", "-f", "-p", "80", "-h", "/www"},
		ExposedPorts: map[string]struct{}{"80/tcp": {}},
	}})
	add(Pause, "static C pause (handles SIGTERM/SIGINT, reaps zombies)", pauseSpec(pause))
	arm64 := add("berth-test/arm64-marker:latest", "linux/arm64 marker image, part of the multi-arch index", spec{
		platform: v1.Platform{OS: "linux", Architecture: "arm64"},
		layers:   []layerSpec{{createdBy: "add /arch", entries: []Entry{File("/arch", 0o644, []byte("arm64"))}}},
	})
	if firstErr != nil {
		return nil, firstErr
	}
	idx, err := index(busybox, arm64)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %s: %w", MultiArch, err)
	}
	set[MultiArch] = Artifact{Index: idx, About: "OCI index: busybox linux/amd64 + marker linux/arm64"}
	return set, nil
}

func pauseSpec(pause []byte) spec {
	return spec{
		layers: []layerSpec{{createdBy: "add static /pause", entries: []Entry{File("/pause", 0o755, pause)}}},
		config: v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"},
	}
}

// layeredLayers puts files in a lower layer and deletes some from above:
// a whiteout of /data/gone.txt and an opaque /opaque directory.
func layeredLayers(base layerSpec) []layerSpec {
	lower := layerSpec{createdBy: "layer 1: files to keep and to delete", entries: []Entry{
		Dir("/data", 0o755),
		File("/data/keep.txt", 0o644, []byte(LayeredPresent["/data/keep.txt"])),
		File("/data/gone.txt", 0o644, []byte("whited out by layer 2\n")),
		Dir("/opaque", 0o755),
		File("/opaque/old1.txt", 0o644, []byte("hidden by the opaque layer\n")),
		File("/opaque/old2.txt", 0o644, []byte("hidden by the opaque layer\n")),
		File("/etc/motd", 0o644, []byte("from layer 1\n")),
	}}
	middle := layerSpec{createdBy: "layer 2: whiteout and opaque directory", entries: []Entry{
		Dir("/data", 0o755),
		Whiteout("/data/gone.txt"),
		Dir("/opaque", 0o755),
		Opaque("/opaque"),
		File("/opaque/new.txt", 0o644, []byte(LayeredPresent["/opaque/new.txt"])),
	}}
	upper := layerSpec{createdBy: "layer 3: add and overwrite", entries: []Entry{
		Dir("/data", 0o755),
		File("/data/layer3.txt", 0o644, []byte(LayeredPresent["/data/layer3.txt"])),
		Dir("/etc", 0o755),
		File("/etc/motd", 0o644, []byte(LayeredPresent["/etc/motd"])),
	}}
	return []layerSpec{base, lower, middle, upper}
}
