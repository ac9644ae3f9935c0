package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/wait"
)

// conformanceCatalogue builds the conformance set with the static C pause
// standing in for agnhost, sample-apiserver and etcd (any static executable
// will do for the layout) and a fake k8s.io/kubernetes tree holding the
// files the images copy.
func conformanceCatalogue(t *testing.T) Set {
	t.Helper()
	return conformanceCatalogueWith(t, func(opts *ConformanceOptions) {
		opts.SampleAPIServer, opts.Etcd = opts.Agnhost, opts.Agnhost
	})
}

// conformanceCatalogueWith is conformanceCatalogue with options adjusted by
// adjust; left empty, SampleAPIServer and Etcd are built from berth's module.
func conformanceCatalogueWith(t *testing.T, adjust func(*ConformanceOptions)) Set {
	t.Helper()
	hostcheck.Require(t, hostcheck.Gcc, hostcheck.BusyboxStatic, hostcheck.BusyboxAsh)
	var progs programs
	pause, err := progs.get(t.Context(), "pause")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	agnhost := filepath.Join(dir, "agnhost")
	kube := filepath.Join(dir, "kubernetes")
	files := map[string]string{
		agnhost: string(pause),
		filepath.Join(kube, "test/images/agnhost/porter/localhost.crt"): "CRT",
		filepath.Join(kube, "test/images/agnhost/porter/localhost.key"): "KEY",
		filepath.Join(kube, "test/images/kitten/html/kitten.jpg"):       "KITTEN-JPG",
		filepath.Join(kube, "test/images/kitten/html/data.json"):        `{"image":"kitten"}`,
		filepath.Join(kube, "test/images/nautilus/html/nautilus.jpg"):   "NAUTILUS-JPG",
		filepath.Join(kube, "test/images/nautilus/html/data.json"):      `{"image":"nautilus"}`,
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tools := []string{}
	for _, p := range []string{"/usr/bin/curl", "/bin/bash", "/usr/bin/nc.openbsd", "/usr/bin/dig", "/usr/bin/getent"} {
		if _, err := os.Stat(p); err == nil {
			tools = append(tools, p)
		}
	}
	opts := ConformanceOptions{
		Busybox: hostcheck.BusyboxPath, Shell: busyboxAsh(t), Agnhost: agnhost, KubernetesDir: kube, HostTools: tools,
	}
	adjust(&opts)
	set, err := ConformanceCatalogue(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestConformanceCatalogueNamesAndLayout(t *testing.T) {
	set := conformanceCatalogue(t)
	for _, ref := range []string{ConformanceAgnhost, ConformanceAgnhostPrev, ConformanceBusybox, ConformancePause,
		ConformanceNginx, ConformanceNginxNew, ConformanceNonewprivs, ConformanceNonRoot, ConformanceKitten, ConformanceNautilus, ConformanceGlibcDNS,
		ConformanceSampleAPIServer, ConformanceEtcd} {
		if a, ok := set[ref]; !ok || a.Image == nil {
			t.Errorf("conformance catalogue lacks %s", ref)
		}
	}
	if len(set) != 13 {
		t.Errorf("conformance catalogue has %d references, want 13: %v", len(set), set.Names())
	}
	// The aggregator test runs the sample apiserver through its ENTRYPOINT
	// (args only) and etcd by path.
	for ref, want := range map[string]struct{ entrypoint, cmd, file string }{
		ConformanceSampleAPIServer: {"/sample-apiserver", "", "sample-apiserver"},
		ConformanceEtcd:            {"", "/usr/local/bin/etcd", "usr/local/bin/etcd"},
	} {
		cf, err := set[ref].Image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if e, c := strings.Join(cf.Config.Entrypoint, " "), strings.Join(cf.Config.Cmd, " "); e != want.entrypoint || c != want.cmd {
			t.Errorf("%s ENTRYPOINT %q CMD %q, want %q and %q", ref, e, c, want.entrypoint, want.cmd)
		}
		m := flattenHeaders(t, set[ref].Image)
		if h := m[want.file]; h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
			t.Errorf("%s: /%s is %v, want an executable file", ref, want.file, h)
		}
		if m["bin/sh"] == nil {
			t.Errorf("%s lacks busybox-static's /bin/sh", ref)
		}
	}

	agnhost := set[ConformanceAgnhost].Image
	cf, err := agnhost.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != "/agnhost" || strings.Join(cf.Config.Cmd, " ") != "pause" {
		t.Errorf("agnhost ENTRYPOINT %q CMD %q, want /agnhost and pause", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	merged := flattenHeaders(t, agnhost)
	for name, typ := range map[string]byte{
		"agnhost": tar.TypeReg, "agnhost-2": tar.TypeSymlink, "uploads": tar.TypeDir,
		"localhost.crt": tar.TypeReg, "localhost.key": tar.TypeReg, "bin/sh": tar.TypeReg, // upstream's ash
		"bin/nc": tar.TypeLink, "home/user-defined-in-image": tar.TypeDir,
	} {
		if h := merged[name]; h == nil || h.Typeflag != typ {
			t.Errorf("agnhost image: %s is %v, want type %c", name, h, typ)
		}
	}
	if h := merged["home/user-defined-in-image"]; h != nil && (h.Uid != 1000 || h.Gid != 1000) {
		t.Errorf("user-defined-in-image's home owned by %d:%d, want 1000:1000", h.Uid, h.Gid)
	}

	for ref, want := range map[string]string{ConformanceKitten: "kitten.jpg", ConformanceNautilus: "nautilus.jpg"} {
		m := flattenHeaders(t, set[ref].Image)
		if m[want] == nil || m["data.json"] == nil || m["agnhost"] == nil || m["etc/os-release"] == nil {
			t.Errorf("%s lacks /%s, /data.json, /agnhost or /etc/os-release (the ImageVolume test reads it)", ref, want)
		}
		cf, err := set[ref].Image.ConfigFile()
		if err != nil || strings.Join(cf.Config.Cmd, " ") != "test-webserver" {
			t.Errorf("%s CMD %v (%v), want test-webserver", ref, cf.Config.Cmd, err)
		}
	}
	if d1, d2 := digestOf(t, set, ConformanceAgnhost), digestOf(t, set, ConformanceAgnhostPrev); d1 != d2 {
		t.Errorf("the two agnhost tags are %s and %s, want one build", d1, d2)
	}
	if h := flattenHeaders(t, set[ConformanceNonewprivs].Image)["usr/local/bin/nnp"]; h == nil || h.Mode&0o4000 == 0 {
		t.Errorf("nonewprivs: /usr/local/bin/nnp %v, want setuid", h)
	}
	// Upstream's ash replaces busybox's sh in the busybox image (and agnhost's) only.
	for ref, typ := range map[string]byte{ConformanceBusybox: tar.TypeReg, ConformanceNonRoot: tar.TypeLink, ConformanceNginx: tar.TypeLink} {
		if h := flattenHeaders(t, set[ref].Image)["bin/sh"]; h == nil || h.Typeflag != typ {
			t.Errorf("%s: /bin/sh is %v, want type %c", ref, h, typ)
		}
	}
	for ref, user := range map[string]string{ConformanceNonRoot: "1234", ConformancePause: "65535:65535"} {
		cf, err := set[ref].Image.ConfigFile()
		if err != nil || cf.Config.User != user {
			t.Errorf("%s USER %q (%v), want %q", ref, cf.Config.User, err, user)
		}
	}
}

func TestConformanceCatalogueRefusesDynamicAgnhost(t *testing.T) {
	hostcheck.Require(t, hostcheck.BusyboxStatic, hostcheck.BusyboxAsh)
	_, err := ConformanceCatalogue(t.Context(), ConformanceOptions{
		Busybox: hostcheck.BusyboxPath, Shell: busyboxAsh(t), Agnhost: "/usr/bin/env", KubernetesDir: t.TempDir(),
	})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamically linked agnhost: got %v, want a refusal naming CGO_ENABLED=0", err)
	}
}

// TestConformanceCatalogueRefusesDynamicAggregatorServers: a prebuilt
// sample-apiserver or etcd must be static, as agnhost must.
func TestConformanceCatalogueRefusesDynamicAggregatorServers(t *testing.T) {
	hostcheck.Require(t, hostcheck.Gcc, hostcheck.BusyboxStatic, hostcheck.BusyboxAsh)
	var progs programs
	pause, err := progs.get(t.Context(), "pause")
	if err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(t.TempDir(), "static")
	if err := os.WriteFile(static, pause, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(*ConformanceOptions){
		"sample-apiserver": func(o *ConformanceOptions) { o.SampleAPIServer, o.Etcd = "/usr/bin/env", static },
		"etcd":             func(o *ConformanceOptions) { o.SampleAPIServer, o.Etcd = static, "/usr/bin/env" },
	} {
		opts := ConformanceOptions{Busybox: hostcheck.BusyboxPath, Shell: busyboxAsh(t), Agnhost: static, KubernetesDir: t.TempDir()}
		set(&opts)
		if _, err := ConformanceCatalogue(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
			t.Errorf("a dynamically linked %s: got %v, want a refusal naming CGO_ENABLED=0", name, err)
		}
	}
}

func TestConformanceCatalogueRefusesMissingOrDynamicShell(t *testing.T) {
	hostcheck.Require(t, hostcheck.BusyboxStatic)
	opts := ConformanceOptions{Busybox: hostcheck.BusyboxPath, Agnhost: "/usr/bin/env", KubernetesDir: t.TempDir()}
	if _, err := ConformanceCatalogue(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "Shell") {
		t.Errorf("no shell: got %v, want a refusal naming Shell", err)
	}
	opts.Shell = "/usr/bin/env"
	if _, err := ConformanceCatalogue(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "build-busybox-ash.sh") {
		t.Errorf("a dynamically linked shell: got %v, want a refusal naming build-busybox-ash.sh", err)
	}
}

// TestConformanceBusyboxShellKeepsAnyVariableName runs the busybox image's
// sh as the envFrom conformance tests do (`sh -c env`, variables named
// data-1 and p-data-1): its children must see every variable it was given.
func TestConformanceBusyboxShellKeepsAnyVariableName(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	set := conformanceCatalogue(t)
	dir := extract(t, set[ConformanceBusybox].Image)
	// /bin/sh by path: for a bare "sh" busybox's env would run its own sh applet.
	out := chrootOutput(t, dir, "0:0", "/bin/env", "-i", "PATH=/bin", "data-1=value-1", "p-data-1=value-1",
		"DATA_2=value-2", "/bin/sh", "-c", "env")
	lines := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		lines[l] = true
	}
	for _, want := range []string{"data-1=value-1", "p-data-1=value-1", "DATA_2=value-2"} {
		if !lines[want] {
			t.Errorf("sh -c env in the busybox image: output lacks %q:\n%s", want, out)
		}
	}
}

// TestConformanceBusyboxShellWordsErrorsAsUpstream runs the busybox image's
// sh on a read-only root as the read-only root filesystem test does: its
// message must be upstream ash's, word for word, which the test compares.
func TestConformanceBusyboxShellWordsErrorsAsUpstream(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	set := conformanceCatalogue(t)
	dir := extract(t, set[ConformanceBusybox].Image)
	// A private mount namespace holds the read-only bind mount of the root.
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec chroot "$1" /bin/sh -c 'echo test > /file'`
	out, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", dir).CombinedOutput()
	if err == nil {
		t.Fatalf("writing /file on a read-only root succeeded:\n%s", out)
	}
	const want = "/bin/sh: can't create /file: Read-only file system"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("sh on a read-only root printed %q, want %q", got, want)
	}
}

// TestConformanceAgnhostToolsRunChrooted runs the host tools copied into the
// agnhost image with their libraries, and resolves upstream's image users.
func TestConformanceAgnhostToolsRunChrooted(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	set := conformanceCatalogue(t)
	dir := extract(t, set[ConformanceAgnhost].Image)
	script := "id user-defined-in-image; ls /uploads && echo uploads-ok"
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/curl")); err == nil {
		script += "; curl --version | head -n 1"
	}
	if _, err := os.Stat(filepath.Join(dir, "bin/bash")); err == nil {
		script += "; bash -c 'echo bash-ok'"
	}
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/nc.openbsd")); err == nil {
		// With the image's PATH, nc is netcat-openbsd, not busybox's applet without -u.
		script += "; nc -h 2>&1 | grep -q 'UDP mode' && echo nc-udp-ok"
	}
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/dig")); err == nil {
		script += "; dig -v 2>&1 | grep -q '^DiG 9' && echo dig-ok"
	}
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/getent")); err == nil {
		script += "; getent passwd user-defined-in-image >/dev/null && echo getent-ok"
	}
	out := containerLikeOutput(t, dir, imagePath(t, set[ConformanceAgnhost].Image), script)
	for _, want := range []string{"uid=1000(user-defined-in-image)", "50000(group-defined-in-image)", "uploads-ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("chrooted agnhost image: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(script, "curl") && !strings.Contains(out, "curl ") {
		t.Errorf("curl did not run in the image:\n%s", out)
	}
	if strings.Contains(script, "bash -c") && !strings.Contains(out, "bash-ok") {
		t.Errorf("bash did not run in the image:\n%s", out)
	}
	if strings.Contains(script, "nc -h") && !strings.Contains(out, "nc-udp-ok") {
		t.Errorf("nc in the image has no UDP mode:\n%s", out)
	}
	for tool, want := range map[string]string{"dig -v": "dig-ok", "getent passwd": "getent-ok"} {
		if strings.Contains(script, tool) && !strings.Contains(out, want) {
			t.Errorf("%s did not run in the image:\n%s", tool, out)
		}
	}
}

// TestConformanceAggregatorServersRunChrooted builds sample-apiserver and
// etcd as the catalogue does when given no prebuilt ones (from berth's
// module), checks both are static and run in their images, and starts etcd
// with the aggregator test's command in a network namespace of its own (as
// in a pod, 127.0.0.1:2379 and the default peer port localhost:2380 are
// then its own): it must serve its client URL.
func TestConformanceAggregatorServersRunChrooted(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	if testing.Short() {
		t.Skip("builds sample-apiserver and etcd")
	}
	set := conformanceCatalogueWith(t, func(*ConformanceOptions) {})
	apiDir := extract(t, set[ConformanceSampleAPIServer].Image)
	etcdDir := extract(t, set[ConformanceEtcd].Image)
	for _, bin := range []string{filepath.Join(apiDir, "sample-apiserver"), filepath.Join(etcdDir, "usr/local/bin/etcd")} {
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := requireStatic(data); err != nil {
			t.Errorf("%s: %v", bin, err)
		}
	}
	if out := chrootOutput(t, apiDir, "0:0", "/sample-apiserver", "--help"); !strings.Contains(out, "Launch a wardle API server") ||
		!strings.Contains(out, "--etcd-servers") {
		t.Errorf("sample-apiserver --help in its image:\n%s", out)
	}
	if out := chrootOutput(t, etcdDir, "0:0", "/usr/local/bin/etcd", "--version"); !strings.Contains(out, "etcd Version: 3.") {
		t.Errorf("etcd --version in its image:\n%s", out)
	}

	// A pod's /etc/hosts comes from the kubelet (berth's agent writes the
	// same localhost lines); the image, like upstream's, has none, and etcd's
	// default peer URL is http://localhost:2380.
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if err := os.WriteFile(filepath.Join(etcdDir, "etc/hosts"), []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	const url = "http://127.0.0.1:2379"
	cmd := exec.Command("unshare", "--net", "chroot", etcdDir, "/bin/sh", "-c",
		"ip link set lo up && exec /usr/local/bin/etcd --listen-client-urls "+url+" --advertise-client-urls "+url)
	cmd.Env = []string{"PATH=" + imagePath(t, set[ConformanceEtcd].Image)}
	// A file, not a buffer: the poll below reads it while etcd writes.
	logPath := filepath.Join(t.TempDir(), "etcd.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	netns := fmt.Sprintf("--net=/proc/%d/ns/net", cmd.Process.Pid)
	var version string
	wait.UntilTrue(t, 60*time.Second, "etcd in its image to serve "+url+"/version", func(ctx context.Context) (bool, error) {
		select {
		case <-done:
			logged, _ := os.ReadFile(logPath)
			return false, fmt.Errorf("etcd exited (%v): %s", exitErr, lastLines(string(logged), 5))
		default:
		}
		out, err := exec.CommandContext(ctx, "nsenter", netns, "chroot", etcdDir, "/bin/wget", "-q", "-O-", url+"/version").Output()
		version = string(out)
		return err == nil, nil
	})
	if !strings.Contains(version, `"etcdserver":"3.`) {
		t.Errorf("etcd /version: %s", version)
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// imagePath is the PATH the image's configuration sets.
func imagePath(t *testing.T, img v1.Image) string {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cfg.Config.Env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			return p
		}
	}
	t.Fatal("the image sets no PATH")
	return ""
}

// containerLikeOutput runs script with the image's /bin/sh in dir as a
// container would: in private PID and mount namespaces with /proc mounted
// (busybox-static's ash picks its applets over PATH only then) and with the
// image's PATH.
// busyboxAsh is the tools dir's static ash (hostcheck.BusyboxAsh).
func busyboxAsh(t *testing.T) string {
	t.Helper()
	p, err := hostcheck.BusyboxAshPath()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func containerLikeOutput(t *testing.T, dir, path, script string) string {
	t.Helper()
	cmd := exec.Command("unshare", "--mount", "--pid", "--fork", "--mount-proc="+filepath.Join(dir, "proc"),
		"chroot", dir, "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=" + path}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in the image: %v\n%s", script, err, out)
	}
	return string(out)
}

// TestConformanceAgnhostCarriesItsFakeRegistry: the node tests' private
// registry (agnhost fake-registry-server) serves pause:testing from the
// agnhost image's /var/registry, laid out as upstream's
// prepare_registry.sh lays it out, and it is the pause image.
func TestConformanceAgnhostCarriesItsFakeRegistry(t *testing.T) {
	set := conformanceCatalogue(t)
	dir := filepath.Join(extract(t, set[ConformanceAgnhost].Image), "var/registry/pause")
	tag, err := os.ReadFile(filepath.Join(dir, "manifests/testing"))
	if err != nil {
		t.Fatal(err)
	}
	digest, err := v1.NewHash(strings.TrimSpace(string(tag)))
	if err != nil {
		t.Fatalf("tag file testing: %v", err)
	}
	if want := digestOf(t, set, ConformancePause); digest != want {
		t.Errorf("pause:testing is %s, want the pause image %s", digest, want)
	}
	blob := func(kind string, d v1.Hash) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, kind, d.Algorithm, d.Hex[:2], d.Hex, "data"))
		if err != nil {
			t.Fatalf("%s %s: %v", kind, d, err)
		}
		if got, _, _ := v1.SHA256(bytes.NewReader(data)); got != d {
			t.Fatalf("%s %s holds content of digest %s", kind, d, got)
		}
		return data
	}
	manifest, err := v1.ParseManifest(bytes.NewReader(blob("manifests", digest)))
	if err != nil {
		t.Fatal(err)
	}
	blob("blobs", manifest.Config.Digest)
	for _, l := range manifest.Layers {
		blob("blobs", l.Digest)
	}
}
