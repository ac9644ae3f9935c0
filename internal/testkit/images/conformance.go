package images

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ConformanceRegistryHosts are the registry hosts in the conformance
// images' names; a runtime under the conformance suite mirrors each of them
// to the test registry. gcr.io is mirrored too, so that the suite's
// private-registry image (gcr.io/k8s-authenticated-test/agnhost), which the
// test registry does not serve, fails to pull as the tests expect, without
// leaving the machine.
var ConformanceRegistryHosts = []string{"registry.k8s.io", "gcr.io", "docker.io"}

// Conformance image references: k8s.io/kubernetes test/utils/image
// (manifest.go, v1.37.2) for the images the [Conformance] tests pull.
const (
	ConformanceAgnhost     = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	ConformanceAgnhostPrev = "registry.k8s.io/e2e-test-images/agnhost:2.55"
	ConformanceBusybox     = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
	ConformancePause       = "registry.k8s.io/pause:3.10.2"
	ConformanceNginx       = "registry.k8s.io/e2e-test-images/nginx:1.27.0-2"
	ConformanceNginxNew    = "registry.k8s.io/e2e-test-images/nginx:1.28.0-2"
	ConformanceNonewprivs  = "registry.k8s.io/e2e-test-images/nonewprivs:1.4"
	ConformanceNonRoot     = "registry.k8s.io/e2e-test-images/nonroot:1.5"
	ConformanceKitten      = "registry.k8s.io/e2e-test-images/kitten:1.8"
	ConformanceNautilus    = "registry.k8s.io/e2e-test-images/nautilus:1.8"
	ConformanceGlibcDNS    = "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1"
	// The aggregator test's Deployment: the sample apiserver (its args
	// only, so the image's ENTRYPOINT runs) beside an etcd it starts as
	// /usr/local/bin/etcd.
	ConformanceSampleAPIServer = "registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2"
	ConformanceEtcd            = "registry.k8s.io/etcd:3.7.0-0"
)

// ConformanceOptions configures ConformanceCatalogue.
type ConformanceOptions struct {
	// Busybox is a statically linked busybox (Debian's busybox-static).
	Busybox string
	// Shell is upstream busybox's ash alone, static
	// (hack/build-busybox-ash.sh), the busybox and agnhost images' /bin/sh.
	// Debian's busybox ash drops environment variables whose names are not
	// shell identifiers (data-1, p-data-1) before it runs a command (a
	// Debian patch); upstream's ash passes them on, and the envFrom tests
	// read them with `sh -c env`. Debian's busybox-static ash also runs its
	// own applet for a bare command name ahead of PATH, so from it agnhost's
	// `nc` would be busybox's, without the UDP mode the HostPort test uses;
	// an ash with no other applet looks every command up on PATH, as
	// alpine's ash in upstream's agnhost image does. And its messages are
	// upstream's ash's, which the read-only root filesystem test compares.
	Shell string
	// Agnhost is a static build of k8s.io/kubernetes/test/images/agnhost
	// (hack/build-conformance.sh writes _output/conformance/agnhost).
	Agnhost string
	// KubernetesDir is the k8s.io/kubernetes module's source directory,
	// for the files upstream's Dockerfiles add (agnhost's porter
	// certificate, kitten's and nautilus's pages).
	KubernetesDir string
	// HostTools are host executables put into the agnhost images at the
	// same path with every shared library they load (curl, bash, dig,
	// getent: upstream's agnhost is alpine with them installed; busybox has
	// none of them). The glibc-dns-testing image carries them too: the DNS
	// tests run the same dig and getent queries from both images, and
	// Debian's are glibc programs, as that image's are.
	HostTools []string
	// SampleAPIServer and Etcd are static builds of k8s.io/sample-apiserver
	// and of etcd's server. Empty: the catalogue builds each from berth's
	// module (goBuild), which needs the go command and a working directory
	// inside berth's module.
	SampleAPIServer string
	Etcd            string
}

// agnhostOSRelease says what the image is, and names the base of the
// image it stands in for: the ImageVolume test reads it from kitten (built
// on agnhost) and looks for upstream's base, Alpine Linux.
const agnhostOSRelease = `NAME="berth stand-in for agnhost on Alpine Linux (busybox-static)"
ID=berth-agnhost
PRETTY_NAME="agnhost stand-in built offline by berth; upstream's base is Alpine Linux"
`

// agnhostUsers are upstream agnhost's image users: user-defined-in-image
// (1000) in group-defined-in-image (50000), for the supplemental-groups tests.
const (
	agnhostPasswd = passwd + "user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh\n"
	agnhostGroup  = group + "user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n"
)

// ConformanceCatalogue builds the images the Kubernetes v1.37.2 conformance
// tests pull, under their upstream names. All start from one busybox-static
// layer; agnhost adds upstream's agnhost binary and the tools its tests exec,
// busybox adds upstream's ash as /bin/sh, sample-apiserver and etcd add their
// static Go servers (built here unless opts names prebuilt ones).
func ConformanceCatalogue(ctx context.Context, opts ConformanceOptions) (Set, error) {
	if opts.Busybox == "" || opts.Shell == "" || opts.Agnhost == "" || opts.KubernetesDir == "" {
		return nil, fmt.Errorf("conformance catalogue: Busybox, Shell, Agnhost and KubernetesDir are all needed")
	}
	bb, err := os.ReadFile(opts.Busybox)
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: read busybox: %w", err)
	}
	applets, err := appletList(ctx, opts.Busybox)
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: %w", err)
	}
	shell, err := os.ReadFile(opts.Shell)
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: read shell: %w", err)
	}
	if err := requireStatic(shell); err != nil {
		return nil, fmt.Errorf("conformance catalogue: %s: %w (build it with hack/build-busybox-ash.sh)", opts.Shell, err)
	}
	agnhost, err := os.ReadFile(opts.Agnhost)
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: read agnhost: %w", err)
	}
	if err := requireStatic(agnhost); err != nil {
		return nil, fmt.Errorf("conformance catalogue: %s: %w (build it with CGO_ENABLED=0)", opts.Agnhost, err)
	}
	sampleAPIServer, err := goProgram(ctx, opts.SampleAPIServer, sampleAPIServerPackage)
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: %w", err)
	}
	etcd, err := goProgram(ctx, opts.Etcd, etcdPackage)
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: %w", err)
	}
	read := func(rel string) []byte {
		b, rerr := os.ReadFile(filepath.Join(opts.KubernetesDir, rel))
		if rerr != nil && err == nil {
			err = fmt.Errorf("conformance catalogue: %w", rerr)
		}
		return b
	}
	crt, key := read("test/images/agnhost/porter/localhost.crt"), read("test/images/agnhost/porter/localhost.key")
	kittenJPG, kittenJSON := read("test/images/kitten/html/kitten.jpg"), read("test/images/kitten/html/data.json")
	nautilusJPG, nautilusJSON := read("test/images/nautilus/html/nautilus.jpg"), read("test/images/nautilus/html/data.json")
	if err != nil {
		return nil, err
	}
	tools, err := hostTools(opts.HostTools)
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: %w", err)
	}
	var progs programs
	pause, err := progs.get(ctx, "pause")
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: %w", err)
	}
	nginx, err := progs.get(ctx, "nginx")
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: %w", err)
	}
	nnp, err := progs.get(ctx, "nonewprivs")
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: %w", err)
	}

	base := sharedLayer("busybox-static "+opts.Busybox, busyboxRoot(bb, applets, nil))
	agnhostLayer := sharedLayer("agnhost, its tools, shell, users and files", agnhostEntries(agnhost, shell, tools, crt, key))
	set := Set{}
	add := func(about string, s spec, refs ...string) {
		img, berr := build(s)
		if berr != nil && err == nil {
			err = fmt.Errorf("conformance catalogue: %s: %w", refs[0], berr)
		}
		for _, ref := range refs {
			set[ref] = Artifact{Image: img, About: about}
		}
	}
	agnhostConfig := v1.Config{
		// Upstream's alpine base sets PATH; /usr/bin before /bin makes a
		// tool's command link (toolCommands) win over busybox's applet.
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Entrypoint: []string{"/agnhost"},
		Cmd:        []string{"pause"},
		ExposedPorts: map[string]struct{}{
			"80/tcp": {}, "8080/tcp": {}, "8081/tcp": {}, "9376/tcp": {}, "5000/tcp": {},
		},
	}
	pauseImage, err := build(pauseSpec(pause))
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: pause: %w", err)
	}
	registryFiles, err := fakeRegistryEntries("pause", "testing", pauseImage)
	if err != nil {
		return nil, fmt.Errorf("conformance catalogue: %w", err)
	}
	add("upstream agnhost (static, built from k8s.io/kubernetes) on busybox-static with upstream busybox's ash as /bin/sh, with "+toolNames(opts.HostTools)+
		", and the pause image as pause:testing under /var/registry for its fake-registry-server; ENTRYPOINT /agnhost, CMD pause; the one build stands for both tags",
		spec{layers: []layerSpec{base, agnhostLayer, {createdBy: "the fake registry's pause:testing (upstream's prepare_registry.sh)", entries: registryFiles}},
			config: agnhostConfig},
		ConformanceAgnhost, ConformanceAgnhostPrev)
	for _, site := range []struct {
		ref, name string
		jpg, json []byte
	}{
		{ConformanceKitten, "kitten", kittenJPG, kittenJSON},
		{ConformanceNautilus, "nautilus", nautilusJPG, nautilusJSON},
	} {
		add("agnhost with upstream's "+site.name+".jpg and data.json; CMD test-webserver", spec{layers: []layerSpec{base, agnhostLayer, {
			createdBy: "add " + site.name + ".jpg and data.json",
			entries: []Entry{
				File("/"+site.name+".jpg", 0o644, site.jpg),
				File("/data.json", 0o644, site.json),
			},
		}}, config: v1.Config{Entrypoint: agnhostConfig.Entrypoint, Cmd: []string{"test-webserver"}, ExposedPorts: agnhostConfig.ExposedPorts}},
			site.ref)
	}
	add("the agnhost image's files (Debian's dig and getent, glibc programs with their libraries) with CMD sh; no coredns binary",
		spec{layers: []layerSpec{base, agnhostLayer}, config: v1.Config{Env: agnhostConfig.Env, Cmd: []string{"sh"}}}, ConformanceGlibcDNS)
	add("busybox-static with upstream busybox's ash as /bin/sh (keeps variables named data-1), CMD sh", spec{layers: []layerSpec{base, {
		createdBy: "upstream busybox's ash as /bin/sh",
		entries:   []Entry{File("/bin/sh", 0o755, shell)},
	}}, config: v1.Config{Cmd: []string{"sh"}}}, ConformanceBusybox)
	add("static C pause, USER 65535:65535", pauseSpec(pause), ConformancePause)
	add("nginx stand-in on port 80 (C master process running busybox httpd on /usr/share/nginx/html)",
		nginxSpec(base, nginx, nil), ConformanceNginx, ConformanceNginxNew)
	add("setuid-root /usr/local/bin/nnp printing \"Effective uid: N\"; CMD nnp", spec{layers: []layerSpec{base, {
		createdBy: "add setuid /usr/local/bin/nnp",
		entries:   []Entry{File("/usr/local/bin/nnp", 0o4755, nnp)},
	}}, config: v1.Config{Cmd: []string{"nnp"}}}, ConformanceNonewprivs)
	add("busybox-static with USER 1234", spec{layers: []layerSpec{base}, config: v1.Config{Cmd: []string{"sh"}, User: "1234"}},
		ConformanceNonRoot)
	add("upstream sample-apiserver (static, k8s.io/sample-apiserver at berth's pinned release) on busybox-static; ENTRYPOINT /sample-apiserver",
		sampleAPIServerSpec(base, sampleAPIServer), ConformanceSampleAPIServer)
	add("etcd server (static, go.etcd.io/etcd/server/v3 at berth's pinned release) at /usr/local/bin/etcd on busybox-static",
		etcdSpec(base, etcd), ConformanceEtcd)
	if err != nil {
		return nil, err
	}
	return set, nil
}

// sampleAPIServerSpec is upstream's sample-apiserver image (its Dockerfile
// adds the binary at /sample-apiserver as ENTRYPOINT on alpine): the
// aggregator test gives the container args only.
func sampleAPIServerSpec(base layerSpec, bin []byte) spec {
	return spec{layers: []layerSpec{base, {
		createdBy: "add /sample-apiserver",
		entries:   []Entry{File("/sample-apiserver", 0o755, bin)},
	}}, config: v1.Config{Entrypoint: []string{"/sample-apiserver"}}}
}

// etcdSpec is the etcd image at the path the aggregator test's command runs
// (/usr/local/bin/etcd, where upstream's image has it) with etcd's client and
// peer ports. CMD runs etcd, so that the image does something without a
// command; the test always gives one.
func etcdSpec(base layerSpec, bin []byte) spec {
	return spec{layers: []layerSpec{base, {
		createdBy: "add /usr/local/bin/etcd",
		entries:   []Entry{File("/usr/local/bin/etcd", 0o755, bin)},
	}}, config: v1.Config{
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Cmd:          []string{"/usr/local/bin/etcd"},
		ExposedPorts: map[string]struct{}{"2379/tcp": {}, "2380/tcp": {}},
	}}
}

// toolCommands are host tools Debian installs under another name than the
// command the tests run: upstream's agnhost image (alpine) has
// netcat-openbsd as nc, whose -u (UDP) the HostPort test uses and
// busybox's nc lacks.
var toolCommands = map[string]string{"nc.openbsd": "nc"}

// agnhostEntries is the layer upstream's agnhost Dockerfile adds to its base.
func agnhostEntries(agnhost, shell []byte, tools []hostFile, crt, key []byte) []Entry {
	var entries []Entry
	have := map[string]bool{"/": true}
	for _, d := range baseDirs {
		have[path.Clean(d.Header.Name)] = true
	}
	var paths []string
	for _, f := range tools {
		paths = append(paths, f.path)
	}
	for _, d := range parentDirs(paths, have) {
		entries = append(entries, Dir(d, 0o755))
	}
	for _, f := range tools {
		entries = append(entries, File(f.path, 0o755, f.data))
		if command, ok := toolCommands[path.Base(f.path)]; ok {
			entries = append(entries, Symlink(path.Join("/usr/bin", command), path.Base(f.path)))
		}
	}
	return append(entries,
		File("/bin/sh", 0o755, shell),
		File("/agnhost", 0o755, agnhost),
		Symlink("/agnhost-2", "agnhost"),
		Dir("/uploads", 0o755),
		File("/localhost.crt", 0o644, crt),
		File("/localhost.key", 0o600, key),
		File("/etc/passwd", 0o644, []byte(agnhostPasswd)),
		File("/etc/group", 0o644, []byte(agnhostGroup)),
		File("/etc/os-release", 0o644, []byte(agnhostOSRelease)),
		Dir("/home/user-defined-in-image", 0o755).Owned(1000, 1000),
	)
}

// hostTools reads each executable and, transitively, every shared library
// it loads, each once, at its host path.
func hostTools(paths []string) ([]hostFile, error) {
	var files []hostFile
	seen := map[string]bool{}
	var visit func(p string, data []byte) error
	visit = func(p string, data []byte) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		files = append(files, hostFile{path: p, data: data})
		libs, err := sharedLibs(data)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, l := range libs {
			if err := visit(l.path, l.data); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("host tool: %w", err)
		}
		if err := visit(p, data); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// requireStatic fails if binary asks for a program interpreter.
func requireStatic(binary []byte) error {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return fmt.Errorf("read ELF: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked")
		}
	}
	return nil
}

func toolNames(paths []string) string {
	if len(paths) == 0 {
		return "busybox's applets only"
	}
	s := "busybox's applets"
	for _, p := range paths {
		s += ", " + path.Base(p)
	}
	return s
}
