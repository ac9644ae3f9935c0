package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// CritestDefaultImage is critest's default test container image.
const CritestDefaultImage = "registry.k8s.io/e2e-test-images/busybox:1.29-2"

// CritestRegistryHosts are the registry hosts in critest's image names; a
// runtime under critest mirrors each of them to the test registry
// (e.g. --registry-mirror gcr.io=http://127.0.0.1:5000).
var CritestRegistryHosts = []string{"gcr.io", "registry.k8s.io", "k8s.gcr.io", "public.ecr.aws"}

// CritestOptions configures CritestCatalogue.
type CritestOptions struct {
	// DebianBusybox is Debian's dynamically linked busybox (package
	// "busybox", not busybox-static), e.g. from FetchDebianBusybox.
	//
	// Why not busybox-static: Debian builds it with applets running
	// in-process (`sh -c ls` never execs /bin/ls), which defeats critest's
	// MaskedPaths spec. The dynamic build execs applets; with every applet a
	// hard link (not a symlink) masking /bin/ls masks only ls.
	DebianBusybox string
}

// CritestCatalogue builds the images critest v1.37.0 pulls, under critest's
// own names (see /work/shared/critest-images.md for the table). All share
// one base layer: Debian's dynamic busybox with the host's glibc files,
// applets as hard links, static pgrep and ipcs (Debian's busybox lacks
// them), upstream busybox's /etc/passwd and /etc/group, CMD ["sh"].
func CritestCatalogue(ctx context.Context, opts CritestOptions) (Set, error) {
	var progs programs
	base, err := critestBase(ctx, opts, &progs)
	if err != nil {
		return nil, fmt.Errorf("critest catalogue: %w", err)
	}
	prog := func(name string) []byte {
		b, perr := progs.get(ctx, name)
		if perr != nil && err == nil {
			err = perr
		}
		return b
	}
	pause, nginx, nonewprivs := prog("pause"), prog("nginx"), prog("nonewprivs")
	if err != nil {
		return nil, fmt.Errorf("critest catalogue: %w", err)
	}

	set := Set{}
	add := func(about string, s spec, refs ...string) {
		img, berr := build(s)
		if berr != nil && err == nil {
			err = fmt.Errorf("critest catalogue: %s: %w", refs[0], berr)
		}
		for _, ref := range refs {
			set[ref] = Artifact{Image: img, About: about}
		}
	}
	shell := v1.Config{Cmd: []string{"sh"}}
	withLayer := func(l layerSpec) []layerSpec { return []layerSpec{base, l} }
	marker := func(text string) []layerSpec {
		return withLayer(layerSpec{createdBy: "add /marker", entries: []Entry{File("/marker", 0o644, []byte(text+"\n"))}})
	}

	add("busybox base (critest's default image)", spec{layers: []layerSpec{base}, config: shell}, CritestDefaultImage)
	add("nginx stand-in on port 80: C master process (nginx.pid, `pidof nginx`, \"master process\" title) running busybox httpd",
		nginxSpec(base, nginx, nil), "registry.k8s.io/e2e-test-images/nginx:1.14-2")
	add("nginx stand-in on port 12003, for host networking",
		nginxSpec(base, nginx, []string{"12003"}), "gcr.io/k8s-staging-cri-tools/hostnet-nginx-amd64:latest")
	add("busybox httpd on port 80; its log starts with an \"httpd\" line", spec{layers: withLayer(layerSpec{
		createdBy: "add httpd-foreground and htdocs",
		entries: []Entry{
			Dir("/usr/local/apache2", 0o755), Dir("/usr/local/apache2/htdocs", 0o755),
			File("/usr/local/apache2/htdocs/index.html", 0o644, []byte("<html><body><h1>It works!</h1></body></html>\n")),
			File("/usr/local/bin/httpd-foreground", 0o755, []byte("#!/bin/sh\n"+
				"echo \"httpd-foreground: busybox httpd serving /usr/local/apache2/htdocs on port 80\"\n"+
				"exec httpd -f -v -p 80 -h /usr/local/apache2/htdocs\n")),
		},
	}), config: v1.Config{Cmd: []string{"httpd-foreground"}, ExposedPorts: map[string]struct{}{"80/tcp": {}}}},
		"registry.k8s.io/e2e-test-images/httpd:2.4.39-4")
	add("setuid-root ENTRYPOINT printing \"Effective uid: N\"", spec{layers: withLayer(layerSpec{
		createdBy: "add setuid /usr/local/bin/nonewprivs",
		entries:   []Entry{File("/usr/local/bin/nonewprivs", 0o4755, nonewprivs)},
	}), config: v1.Config{Entrypoint: []string{"/usr/local/bin/nonewprivs"}}},
		"registry.k8s.io/e2e-test-images/nonewprivs:1.3")
	add("static C pause, USER 65535:65535, one image under two registries", pauseSpec(pause),
		"registry.k8s.io/pause:3.9", "k8s.gcr.io/pause:3.9")

	const staging = "gcr.io/k8s-staging-cri-tools/"
	for _, ref := range []string{"test-image-latest:latest", "test-image-tag:test", "test-image-tag:all",
		"test-image-1:latest", "test-image-2:latest", "test-image-3:latest"} {
		add("busybox with its own /marker (a distinct image ID)", spec{layers: marker(ref), config: shell}, staging+ref)
	}
	add("one image under three tags", spec{layers: marker("test-image-tags"), config: shell},
		staging+"test-image-tags:1", staging+"test-image-tags:2", staging+"test-image-tags:3")
	for name, user := range map[string]string{
		"test-image-user-uid": "1002", "test-image-user-username": "www-data",
		"test-image-user-uid-group": "1003:1004", "test-image-user-username-group": "www-data:1004",
	} {
		add("busybox with USER "+user, spec{layers: []layerSpec{base}, config: v1.Config{Cmd: []string{"sh"}, User: user}},
			staging+name+":latest")
	}
	add("default-user (1000:1000) also in group-defined-in-image (50000); USER 1000", spec{layers: withLayer(layerSpec{
		createdBy: "adduser default-user; addgroup group-defined-in-image",
		entries: []Entry{
			File("/etc/passwd", 0o644, []byte(passwd+"default-user:x:1000:1000:Linux User,,,:/home/default-user:/bin/sh\n")),
			File("/etc/group", 0o644, []byte(group+"default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n")),
			Dir("/home/default-user", 0o755).Owned(1000, 1000),
		},
	}), config: v1.Config{Cmd: []string{"sh"}, User: "1000"}}, staging+"test-image-predefined-group:latest")

	const ecr = "public.ecr.aws/docker/library/busybox:"
	for _, tag := range []string{"1.35.0-glibc", "1-uclibc", "1", "1-glibc", "1-musl"} {
		add("busybox with its own /marker, for critest's benchmarks", spec{layers: marker(ecr + tag), config: shell}, ecr+tag)
	}
	if err != nil {
		return nil, err
	}
	return set, nil
}

// critestBase is the shared base layer of the critest images.
func critestBase(ctx context.Context, opts CritestOptions, progs *programs) (layerSpec, error) {
	if opts.DebianBusybox == "" {
		return layerSpec{}, fmt.Errorf("no Debian dynamic busybox given (see FetchDebianBusybox)")
	}
	bb, err := os.ReadFile(opts.DebianBusybox)
	if err != nil {
		return layerSpec{}, fmt.Errorf("read busybox: %w", err)
	}
	libs, err := sharedLibs(bb)
	if err != nil {
		return layerSpec{}, fmt.Errorf("%s: %w", opts.DebianBusybox, err)
	}
	if len(libs) == 0 {
		return layerSpec{}, fmt.Errorf("%s is statically linked; critest needs Debian's dynamic busybox", opts.DebianBusybox)
	}
	applets, err := appletList(ctx, opts.DebianBusybox)
	if err != nil {
		return layerSpec{}, err
	}
	extra := libs
	for _, name := range []string{"pgrep", "ipcs"} {
		b, err := progs.get(ctx, name)
		if err != nil {
			return layerSpec{}, err
		}
		extra = append(extra, hostFile{path: "/bin/" + name, data: b})
	}
	return sharedLayer("Debian busybox (dynamic) with glibc, pgrep, ipcs", busyboxRoot(bb, applets, extra)), nil
}

// nginxSpec is the nginx stand-in: the C master at /usr/sbin/nginx (see
// csrc/nginx.c) serving /usr/share/nginx/html through busybox httpd.
func nginxSpec(base layerSpec, nginx []byte, args []string) spec {
	return spec{layers: []layerSpec{base, {
		createdBy: "add nginx stand-in",
		entries: []Entry{
			File("/usr/sbin/nginx", 0o755, nginx),
			Dir("/usr/share", 0o755), Dir("/usr/share/nginx", 0o755), Dir("/usr/share/nginx/html", 0o755),
			File("/usr/share/nginx/html/index.html", 0o644, []byte("<html><body><h1>Welcome to nginx!</h1></body></html>\n")),
		},
	}}, config: v1.Config{
		Cmd:          append([]string{"/usr/sbin/nginx"}, args...),
		ExposedPorts: map[string]struct{}{"80/tcp": {}},
		StopSignal:   "SIGTERM",
	}}
}

// FetchDebianBusybox returns the path of Debian's dynamically linked busybox
// (dir/root/bin/busybox), downloading the "busybox" package with `apt-get
// download` and unpacking it with `dpkg-deb -x` the first time; later calls
// reuse it. Concurrent calls (test packages run in parallel) are safe: each
// works in its own temporary directory and the first to finish installs it.
func FetchDebianBusybox(ctx context.Context, dir string) (string, error) {
	root := filepath.Join(dir, "root")
	bin := filepath.Join(root, "bin", "busybox")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("fetch Debian busybox: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "fetch-")
	if err != nil {
		return "", fmt.Errorf("fetch Debian busybox: %w", err)
	}
	defer os.RemoveAll(tmp)
	if out, err := run(ctx, tmp, "apt-get", "download", "busybox"); err != nil {
		return "", fmt.Errorf("fetch Debian busybox: apt-get download busybox (run apt-get update first?): %w: %s", err, out)
	}
	debs, err := filepath.Glob(filepath.Join(tmp, "busybox_*.deb"))
	if err != nil || len(debs) != 1 {
		return "", fmt.Errorf("fetch Debian busybox: want one busybox_*.deb after apt-get download, found %v", debs)
	}
	if out, err := run(ctx, tmp, "dpkg-deb", "-x", debs[0], "root"); err != nil {
		return "", fmt.Errorf("fetch Debian busybox: dpkg-deb -x %s: %w: %s", debs[0], err, out)
	}
	// Renaming the complete tree into place means an interrupted fetch never
	// leaves a half-unpacked root that a later call would trust.
	if err := os.Rename(filepath.Join(tmp, "root"), root); err != nil {
		if _, serr := os.Stat(bin); serr == nil {
			return bin, nil // a concurrent fetch installed it first
		}
		return "", fmt.Errorf("fetch Debian busybox: %w", err)
	}
	return bin, nil
}

func run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}
