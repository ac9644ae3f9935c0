package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/wait"
)

var (
	critestOnce sync.Once
	critestBB   string
	critestSet  Set
	critestErr  error
)

// critestCatalogue builds the critest set once; Debian's dynamic busybox
// is fetched with apt-get into the tools dir on first use and reused after.
func critestCatalogue(t *testing.T) (Set, string) {
	t.Helper()
	hostcheck.Require(t, hostcheck.Gcc)
	critestOnce.Do(func() {
		tools, err := hostcheck.ToolsDir()
		if err != nil {
			critestErr = err
			return
		}
		critestBB, critestErr = FetchDebianBusybox(context.Background(), filepath.Join(tools, "debian-busybox"))
		if critestErr != nil {
			return
		}
		critestSet, critestErr = CritestCatalogue(context.Background(), CritestOptions{DebianBusybox: critestBB})
	})
	if critestErr != nil {
		t.Fatal(critestErr)
	}
	return critestSet, critestBB
}

func digestOf(t *testing.T, s Set, ref string) v1.Hash {
	t.Helper()
	a, ok := s[ref]
	if !ok || a.Image == nil {
		t.Fatalf("critest catalogue lacks %s", ref)
	}
	d, err := a.Image.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCritestCatalogueNamesAndIdentities(t *testing.T) {
	set, _ := critestCatalogue(t)
	const s = "gcr.io/k8s-staging-cri-tools/"
	for _, ref := range []string{CritestDefaultImage, "registry.k8s.io/e2e-test-images/nginx:1.14-2",
		s + "hostnet-nginx-amd64:latest", "registry.k8s.io/e2e-test-images/httpd:2.4.39-4",
		"registry.k8s.io/e2e-test-images/nonewprivs:1.3", s + "test-image-user-uid:latest",
		s + "test-image-user-username:latest", s + "test-image-user-uid-group:latest",
		s + "test-image-user-username-group:latest", s + "test-image-predefined-group:latest"} {
		digestOf(t, set, ref)
	}
	if a, b := digestOf(t, set, "registry.k8s.io/pause:3.9"), digestOf(t, set, "k8s.gcr.io/pause:3.9"); a != b {
		t.Errorf("pause under two registries: %s vs %s, want one image", a, b)
	}
	tags := digestOf(t, set, s+"test-image-tags:1")
	for _, tag := range []string{"2", "3"} {
		if d := digestOf(t, set, s+"test-image-tags:"+tag); d != tags {
			t.Errorf("test-image-tags:%s = %s, want %s", tag, d, tags)
		}
	}
	distinct := map[v1.Hash]string{}
	for _, ref := range []string{s + "test-image-latest:latest", s + "test-image-tag:test", s + "test-image-tag:all",
		s + "test-image-1:latest", s + "test-image-2:latest", s + "test-image-3:latest", s + "test-image-tags:1",
		"public.ecr.aws/docker/library/busybox:1.35.0-glibc", "public.ecr.aws/docker/library/busybox:1-uclibc",
		"public.ecr.aws/docker/library/busybox:1", "public.ecr.aws/docker/library/busybox:1-glibc",
		"public.ecr.aws/docker/library/busybox:1-musl", CritestDefaultImage} {
		d := digestOf(t, set, ref)
		if other, dup := distinct[d]; dup {
			t.Errorf("%s and %s share image %s, want distinct IDs", ref, other, d)
		}
		distinct[d] = ref
	}
	for ref, user := range map[string]string{
		s + "test-image-user-uid:latest": "1002", s + "test-image-user-username:latest": "www-data",
		s + "test-image-user-uid-group:latest": "1003:1004", s + "test-image-user-username-group:latest": "www-data:1004",
		s + "test-image-predefined-group:latest": "1000", "registry.k8s.io/pause:3.9": "65535:65535",
	} {
		cf, err := set[ref].Image.ConfigFile()
		if err != nil || cf.Config.User != user {
			t.Errorf("%s: USER %q (%v), want %q", ref, cf.Config.User, err, user)
		}
	}
}

func TestCritestBaseLayout(t *testing.T) {
	set, _ := critestCatalogue(t)
	merged := flattenHeaders(t, set[CritestDefaultImage].Image)
	for _, applet := range []string{"sh", "ls", "echo", "sleep", "top", "cat", "id", "hostname", "netstat", "brctl", "pidof", "dd", "grep", "httpd"} {
		h := merged["bin/"+applet]
		if h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "bin/busybox" || h.Mode != 0o755 {
			t.Errorf("bin/%s: want a 0755 hard link to bin/busybox, got %+v", applet, h)
		}
	}
	for _, p := range []string{"bin/pgrep", "bin/ipcs", "lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libresolv.so.2"} {
		if h := merged[p]; h == nil || h.Typeflag != tar.TypeReg {
			t.Errorf("%s missing or not a regular file: %+v", p, h)
		}
	}
	nnp := flattenHeaders(t, set["registry.k8s.io/e2e-test-images/nonewprivs:1.3"].Image)["usr/local/bin/nonewprivs"]
	if nnp == nil || nnp.Mode&0o4000 == 0 || nnp.Uid != 0 {
		t.Errorf("nonewprivs: want setuid root, got %+v", nnp)
	}
	files := flatten(t, set["gcr.io/k8s-staging-cri-tools/test-image-predefined-group:latest"].Image)
	if !strings.Contains(files["etc/group"], "group-defined-in-image:x:50000:default-user") ||
		!strings.Contains(files["etc/passwd"], "default-user:x:1000:1000:") {
		t.Errorf("predefined-group /etc files:\n%s\n%s", files["etc/passwd"], files["etc/group"])
	}
}

func flattenHeaders(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = h
	}
}

// TestCritestIpcsSeesHostSegment runs the image's static ipcs on the host:
// a segment made with ipcmk must be listed by its id.
func TestCritestIpcsSeesHostSegment(t *testing.T) {
	set, _ := critestCatalogue(t)
	dir := extract(t, set[CritestDefaultImage].Image)
	out, err := exec.Command("ipcmk", "-M", "4096").Output()
	if err != nil {
		t.Fatalf("ipcmk (util-linux): %v", err)
	}
	id := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Shared memory id:"))
	t.Cleanup(func() { _ = exec.Command("ipcrm", "-m", id).Run() })
	listing, err := exec.Command(filepath.Join(dir, "bin/ipcs"), "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(listing), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == id {
			found = true
		}
	}
	if !found {
		t.Fatalf("ipcs -m does not list segment %s:\n%s", id, listing)
	}
}

// TestCritestNginxStandIn runs the nginx image's entrypoint chrooted into
// its extracted root: it must write its PID file, be found by `pidof nginx`
// under that PID with "master process" in its command line, answer HTTP 200,
// and exit when sent SIGTERM.
func TestCritestNginxStandIn(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	set, debianBusybox := critestCatalogue(t)
	dir := extract(t, set["registry.k8s.io/e2e-test-images/nginx:1.14-2"].Image)
	addr := freeLoopbackAddr(t)
	cmd := exec.Command("chroot", dir, "/usr/sbin/nginx", addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var pid string
	wait.UntilNil(t, 30*time.Second, "nginx to write nginx.pid", func() error {
		b, err := os.ReadFile(filepath.Join(dir, "var/run/nginx.pid"))
		if pid = strings.TrimSpace(string(b)); err == nil && pid == "" {
			return errors.New("empty")
		}
		return err
	})
	if pid != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("nginx.pid %q, but the master we started is %d", pid, cmd.Process.Pid)
	}
	cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil || !strings.Contains(string(cmdline), "master process") {
		t.Fatalf("/proc/%s/cmdline = %q (%v), want \"master process\"", pid, cmdline, err)
	}
	pids, _ := exec.Command(debianBusybox, "pidof", "nginx").Output()
	if !strings.Contains(" "+strings.TrimSpace(string(pids))+" ", " "+pid+" ") {
		t.Fatalf("pidof nginx = %q, want it to include %s", pids, pid)
	}
	var body string
	wait.UntilCtx(t, 30*time.Second, "nginx to answer GET / with 200", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if body = string(b); resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	})
	if !strings.Contains(body, "nginx") {
		t.Errorf("GET / body %q", body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("nginx after SIGTERM: %v", err)
	}
	if exit != nil && exit.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("nginx master was killed by the signal instead of handling it (stderr %q)", stderr.String())
	}
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// extract writes img's merged root into a temporary directory, keeping
// modes (setuid too), hard links and symlinks.
func extract(t *testing.T, img v1.Image) string {
	t.Helper()
	dir := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := extractEntry(dir, h, tr); err != nil {
			t.Fatal(err)
		}
	}
}

func extractEntry(dir string, h *tar.Header, r io.Reader) error {
	p := filepath.Join(dir, filepath.Clean("/"+h.Name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(h.Mode & 0o777)
	if h.Mode&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if h.Mode&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		return os.Chmod(p, mode)
	case tar.TypeReg:
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return os.Chmod(p, mode)
	case tar.TypeLink:
		return os.Link(filepath.Join(dir, filepath.Clean("/"+h.Linkname)), p)
	case tar.TypeSymlink:
		return os.Symlink(h.Linkname, p)
	default:
		return fmt.Errorf("unexpected tar entry type %c for %s", h.Typeflag, h.Name)
	}
}

func TestCritestCatalogueIsReproducible(t *testing.T) {
	first, bb := critestCatalogue(t)
	again, err := CritestCatalogue(t.Context(), CritestOptions{DebianBusybox: bb})
	if err != nil {
		t.Fatal(err)
	}
	a, b := digests(t, first), digests(t, again)
	if len(a) != len(b) || len(a) < 25 {
		t.Fatalf("critest catalogue sizes %d then %d, want equal and at least 25", len(a), len(b))
	}
	for ref, d := range a {
		if b[ref] != d {
			t.Errorf("%s: digest %s then %s", ref, d, b[ref])
		}
	}
}

func TestCritestCatalogueNeedsDynamicBusybox(t *testing.T) {
	hostcheck.Require(t, hostcheck.BusyboxStatic)
	if _, err := CritestCatalogue(t.Context(), CritestOptions{}); err == nil {
		t.Error("no busybox given: accepted")
	}
	_, err := CritestCatalogue(t.Context(), CritestOptions{DebianBusybox: hostcheck.BusyboxPath})
	if err == nil || !strings.Contains(err.Error(), "statically linked") {
		t.Errorf("busybox-static given: got %v, want a statically-linked error", err)
	}
}

// chrootOutput runs argv chrooted into dir as uid:gid and returns its output.
func chrootOutput(t *testing.T, dir, userspec string, argv ...string) string {
	t.Helper()
	out, err := exec.Command("chroot", append([]string{"--userspec=" + userspec, dir}, argv...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("chroot %s %v: %v\n%s", userspec, argv, err, out)
	}
	return string(out)
}

// TestCritestBaseRunsChrooted proves the dynamic busybox finds its glibc in
// the image, applets exec as separate programs, and the users critest
// relies on resolve.
func TestCritestBaseRunsChrooted(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	set, _ := critestCatalogue(t)
	dir := extract(t, set[CritestDefaultImage].Image)
	out := chrootOutput(t, dir, "0:0", "/bin/sh", "-c", "id -u www-data; id -u nobody; ls -ld /tmp; echo hello | grep -c hello")
	if fields := strings.Fields(out); len(fields) < 4 || fields[0] != "33" || fields[1] != "65534" || !strings.HasPrefix(fields[2], "drwxrwxrwt") || fields[len(fields)-1] != "1" {
		t.Errorf("base image commands printed %q", out)
	}
	// In a private PID and mount namespace with /proc mounted in the root,
	// a background sleep must be a process the image's own pgrep finds.
	// The shell opens /dev/null for a background job; a runtime provides it.
	// The background child is the shell until it execs sleep, so the script
	// waits (with the builtin read, no fork) for its comm to say sleep.
	if err := syscall.Mknod(filepath.Join(dir, "dev/null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--pid", "--fork", "--mount-proc="+filepath.Join(dir, "proc"),
		"chroot", dir, "/bin/sh", "-c", "sleep 30 & p=$!; i=0; while [ $i -lt 100000 ]; do read c </proc/$p/comm; [ \"$c\" = sleep ] && break; i=$((i+1)); done; "+
			"pgrep '^sleep$' | grep -qx $p && echo found; kill $p")
	out2, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out2)) != "found" {
		t.Errorf("the image's pgrep did not find its sleep as a process: %v %q", err, out2)
	}
}

// TestCritestNonewprivsIsSetuidRoot runs the entrypoint as uid 1000: with no
// no_new_privs, the setuid bit must raise its effective uid to 0.
func TestCritestNonewprivsIsSetuidRoot(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	set, _ := critestCatalogue(t)
	dir := extract(t, set["registry.k8s.io/e2e-test-images/nonewprivs:1.3"].Image)
	if out := chrootOutput(t, dir, "1000:1000", "/usr/local/bin/nonewprivs"); strings.TrimSpace(out) != "Effective uid: 0" {
		t.Errorf("nonewprivs as uid 1000 printed %q", out)
	}
}

// TestCritestBaseExecsMaskedApplets is critest's MaskedPaths trap: with
// /dev/null bind-mounted over /bin/ls (as a runtime masks a path), `sh -c ls`
// must fail, because Debian's dynamic busybox execs /bin/ls (busybox-static
// would run ls in-process and succeed), while other applets, hard links to
// the same inode, keep working.
func TestCritestBaseExecsMaskedApplets(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	set, _ := critestCatalogue(t)
	dir := extract(t, set[CritestDefaultImage].Image)
	script := "mount --bind /dev/null " + filepath.Join(dir, "bin/ls") + " && chroot " + dir +
		" /bin/sh -c 'ls / >/tmp/ls.out 2>&1; echo ls=$?; cat /etc/group >/tmp/cat.out; echo cat=$?'"
	out, err := exec.Command("unshare", "--mount", "--fork", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("masked run: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 2 || got[0] == "ls=0" || got[1] != "cat=0" {
		t.Fatalf("with /bin/ls masked: got %q, want ls to fail and cat to succeed", out)
	}
}

// TestFetchDebianBusyboxConcurrently fetches into a fresh directory from two
// goroutines at once (as parallel test packages do): both must get the same
// dynamically linked busybox, and a third call must reuse it.
func TestFetchDebianBusyboxConcurrently(t *testing.T) {
	dir := t.TempDir()
	paths := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() { paths[i], errs[i] = FetchDebianBusybox(t.Context(), dir) })
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil {
			t.Fatalf("fetch %d: %v", i, errs[i])
		}
	}
	if paths[0] != paths[1] {
		t.Fatalf("fetches returned %q and %q", paths[0], paths[1])
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if libs, err := sharedLibs(data); err != nil || len(libs) == 0 {
		t.Fatalf("fetched busybox is not dynamically linked: %v %v", libs, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "root" {
		t.Errorf("fetch left %v in %s, want only root", entries, dir)
	}
	if again, err := FetchDebianBusybox(t.Context(), dir); err != nil || again != paths[0] {
		t.Errorf("third fetch: %q %v", again, err)
	}
}
