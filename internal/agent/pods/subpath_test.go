package pods

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	volumevalidation "k8s.io/kubernetes/pkg/volume/validation"
)

// subPathFixture is a Manager with one pod whose emptyDir "data" exists on
// the host, and a host directory holding a marker file that no subPath may
// ever reach.
type subPathFixture struct {
	m       *Manager
	pod     *corev1.Pod
	vol     string // the emptyDir's host path
	host    string // stands for the host's files outside the pod
	hostDir string // a hostPath volume's directory
}

func newSubPathFixture(t *testing.T) *subPathFixture {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bind-mounts subPaths: needs root")
	}
	m := New(Config{NodeName: testNode, DataDir: t.TempDir()}, fake.NewClientset(), nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-subpath"}}
	f := &subPathFixture{m: m, pod: pod, vol: m.volumeDir(pod, "data"), host: t.TempDir(), hostDir: t.TempDir()}
	if err := m.emptyDirVolume(f.vol, &corev1.EmptyDirVolumeSource{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.host, "marker"), []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Whatever a failed test left mounted goes before the temp dirs do.
		left, _ := mountsUnder(m.podDir(pod.UID))
		for i := len(left) - 1; i >= 0; i-- {
			_ = syscall.Unmount(left[i], syscall.MNT_DETACH)
		}
	})
	return f
}

// prepare runs the agent's subPath preparation for one mount of container c.
func (f *subPathFixture) prepare(c string, index int, vm corev1.VolumeMount, env map[string]string) (string, error) {
	volumePath := f.vol
	if vm.Name == "host" {
		volumePath = f.hostDir
	}
	return f.m.subPathHostPath(f.pod, &corev1.Container{Name: c}, index, vm, volumePath, env)
}

func (f *subPathFixture) mounts(t *testing.T) []string {
	t.Helper()
	left, err := mountsUnder(f.m.podDir(f.pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// assertHostUntouched checks that the host directory still holds only its
// marker, so no refused subPath created anything outside the volume.
func (f *subPathFixture) assertHostUntouched(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(f.host)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "marker" {
		t.Errorf("host directory changed: %v", entries)
	}
}

func TestSubPathThroughAPlantedSymlinkIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		plant   func(f *subPathFixture) error
		subPath string
	}{
		{"absolute symlink to /", func(f *subPathFixture) error { return os.Symlink("/", filepath.Join(f.vol, "x")) }, "x"},
		{"absolute symlink to a host directory", func(f *subPathFixture) error { return os.Symlink(f.host, filepath.Join(f.vol, "x")) }, "x"},
		{"absolute symlink to a host file", func(f *subPathFixture) error {
			return os.Symlink(filepath.Join(f.host, "marker"), filepath.Join(f.vol, "x"))
		}, "x"},
		{"relative symlink climbing out", func(f *subPathFixture) error {
			return os.Symlink(strings.Repeat("../", 20), filepath.Join(f.vol, "x"))
		}, "x"},
		{"symlink in an intermediate component", func(f *subPathFixture) error {
			if err := os.Mkdir(filepath.Join(f.host, "etc"), 0o755); err != nil {
				return err
			}
			return os.Symlink(f.host, filepath.Join(f.vol, "a"))
		}, "a/etc"},
		{"symlink in an intermediate component to a missing directory", func(f *subPathFixture) error {
			return os.Symlink(f.host, filepath.Join(f.vol, "a"))
		}, "a/new"},
		{"dangling symlink to a host path", func(f *subPathFixture) error {
			return os.Symlink(filepath.Join(f.host, "new"), filepath.Join(f.vol, "x"))
		}, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSubPathFixture(t)
			if err := tc.plant(f); err != nil {
				t.Fatal(err)
			}
			before := ls(t, f.host)
			got, err := f.prepare("c", 0, corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: tc.subPath}, nil)
			if err == nil {
				t.Fatalf("subPath %q through a symlink out of the volume prepared as %s", tc.subPath, got)
			}
			if !strings.Contains(err.Error(), `subPath`) || !strings.Contains(err.Error(), `volumeMount "data" of container "c"`) {
				t.Errorf("unclear error: %v", err)
			}
			if left := f.mounts(t); len(left) != 0 {
				t.Errorf("refused subPath left mounts: %v", left)
			}
			if after := ls(t, f.host); after != before {
				t.Errorf("host directory changed from %q to %q", before, after)
			}
		})
	}
}

// A container that replaces the subPath directory with a symlink after
// the agent made it (between two containers, or before a restart) gets
// the refusal, not the host.
func TestSubPathSwappedForASymlinkAfterItWasMadeIsRefused(t *testing.T) {
	f := newSubPathFixture(t)
	vm := corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "x"}
	dir := filepath.Join(f.vol, "x")
	if err := makeSubPathDir(newSubpather(), "x", f.vol, dir); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		t.Fatalf("subPath directory not made: %v", err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", dir); err != nil {
		t.Fatal(err)
	}
	if got, err := f.prepare("c", 0, vm, nil); err == nil {
		t.Fatalf("swapped subPath prepared as %s", got)
	}

	// The same for a container whose earlier run already had it bound.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := f.prepare("d", 0, vm, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.host, dir); err != nil {
		t.Fatal(err)
	}
	if got, err := f.prepare("d", 0, vm, nil); err == nil {
		t.Fatalf("subPath swapped before a restart prepared as %s (%s)", got, ls(t, got))
	}
	f.assertHostUntouched(t)
}

func TestSubPathBindsWhatIsInsideTheVolume(t *testing.T) {
	f := newSubPathFixture(t)
	if err := os.WriteFile(filepath.Join(f.vol, "app.conf"), []byte("conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.vol, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../data/real", filepath.Join(f.vol, "link")); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"POD_NAME": "web-0"}
	for i, tc := range []struct {
		vm   corev1.VolumeMount
		want string // the file or directory in the volume the bind shows
	}{
		{corev1.VolumeMount{Name: "data", SubPath: "app.conf"}, "app.conf"},
		{corev1.VolumeMount{Name: "data", SubPath: "new/nested"}, "new/nested"},
		{corev1.VolumeMount{Name: "data", SubPath: "link"}, "real"},
		{corev1.VolumeMount{Name: "data", SubPathExpr: "logs/$(POD_NAME)"}, "logs/web-0"},
		{corev1.VolumeMount{Name: "data", SubPath: "./real/"}, "real"},
	} {
		got, err := f.prepare("c", i, tc.vm, env)
		if err != nil {
			t.Fatalf("%+v: %v", tc.vm, err)
		}
		if !strings.HasPrefix(got, filepath.Join(f.m.podDir(f.pod.UID), subPathsDir, "data", "c")+"/") {
			t.Errorf("%+v bound at %s, not below the pod's volume-subpaths", tc.vm, got)
		}
		bound, err := os.Stat(got)
		if err != nil {
			t.Fatal(err)
		}
		inVolume, err := os.Stat(filepath.Join(f.vol, tc.want))
		if err != nil {
			t.Fatalf("%+v: %v", tc.vm, err)
		}
		if !os.SameFile(bound, inVolume) {
			t.Errorf("%+v: %s is not %s of the volume", tc.vm, got, tc.want)
		}
	}
	// The made directory has the volume's mode (emptyDir: world-writable),
	// as the kubelet's.
	if st, err := os.Stat(filepath.Join(f.vol, "new/nested")); err != nil || st.Mode().Perm() != 0o777 {
		t.Errorf("subPath directory mode %v, %v; want 0777", st.Mode(), err)
	}
	// Preparing again (the container's restart) binds the same.
	again, err := f.prepare("c", 1, corev1.VolumeMount{Name: "data", SubPath: "new/nested"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(again, "written"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.vol, "new/nested/written")); err != nil {
		t.Errorf("a write through the bound subPath did not reach the volume: %v", err)
	}
	f.assertHostUntouched(t)
}

func TestSubPathTextIsCheckedFirst(t *testing.T) {
	f := newSubPathFixture(t)
	for _, tc := range []struct {
		vm   corev1.VolumeMount
		env  map[string]string
		want string
	}{
		{corev1.VolumeMount{Name: "data", SubPath: "/etc"}, nil, `subPath "/etc" must not be an absolute path`},
		{corev1.VolumeMount{Name: "data", SubPath: "../x"}, nil, `must not contain '..'`},
		{corev1.VolumeMount{Name: "data", SubPath: "a/../b"}, nil, `must not contain '..'`},
		{corev1.VolumeMount{Name: "data", SubPathExpr: "$(DIR)"}, map[string]string{"DIR": "../.."}, `must not contain '..'`},
		{corev1.VolumeMount{Name: "data", SubPathExpr: "$(DIR)/$(NAME)"}, map[string]string{"NAME": ""}, `missing value for DIR, NAME`},
	} {
		got, err := f.prepare("c", 0, tc.vm, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %q, %v; want error %q", tc.vm, got, err, tc.want)
		}
	}
	if left := f.mounts(t); len(left) != 0 {
		t.Errorf("refused subPaths left mounts: %v", left)
	}
}

// checkSubPath's ".." rule is a copy of volume validation's (which would
// link the internal API types into the agent); it must agree with it.
func TestCheckSubPathAgreesWithUpstream(t *testing.T) {
	for _, p := range []string{"a", "a/b", "..", "../a", "a/..", "a/../b", "..a", "a..", "a/..b/c", "./a", "a//b", `a\..\b`} {
		ours := checkSubPath(p) != nil
		theirs := volumevalidation.ValidatePathNoBacksteps(p) != nil
		if ours != theirs {
			t.Errorf("%q: refused by berth %v, by upstream %v", p, ours, theirs)
		}
	}
}

func TestRemovePodDirUnmountsSubPathsFirst(t *testing.T) {
	f := newSubPathFixture(t)
	if err := os.WriteFile(filepath.Join(f.hostDir, "keep"), []byte("host data"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, vm := range []corev1.VolumeMount{
		{Name: "data", SubPath: "dir"},
		{Name: "data", SubPath: "dir"},
		{Name: "host", SubPath: "."},
		{Name: "host", SubPath: "keep"},
	} {
		if _, err := f.prepare("c", i, vm, nil); err != nil {
			t.Fatal(err)
		}
	}
	if left := f.mounts(t); len(left) != 4 {
		t.Fatalf("want 4 subPath mounts, have %v", left)
	}
	f.m.removePodDir(string(f.pod.UID))
	if left := f.mounts(t); len(left) != 0 {
		t.Errorf("mounts left after the pod's removal: %v", left)
	}
	if _, err := os.Stat(f.m.podDir(f.pod.UID)); !os.IsNotExist(err) {
		t.Errorf("pod directory not removed: %v", err)
	}
	// The hostPath volume's files were bound below the pod's directory;
	// removing that directory must not have reached them.
	if data, err := os.ReadFile(filepath.Join(f.hostDir, "keep")); err != nil || string(data) != "host data" {
		t.Errorf("hostPath file after pod removal: %q, %v", data, err)
	}
}

func TestRemovePodDirLeavesADirectoryThatStillHasMounts(t *testing.T) {
	f := newSubPathFixture(t)
	stuck := filepath.Join(f.m.podDir(f.pod.UID), "containers", "c")
	if err := os.MkdirAll(stuck, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(f.hostDir, stuck, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.hostDir, "keep"), []byte("host data"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.m.removePodDir(string(f.pod.UID))
	if _, err := os.Stat(filepath.Join(f.hostDir, "keep")); err != nil {
		t.Errorf("removal reached through a mount it did not know: %v", err)
	}
	if _, err := os.Stat(f.vol); err != nil {
		t.Errorf("pod directory removed despite a mount in it: %v", err)
	}
}

func ls(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return strings.Join(names, ",")
}

// A subPath made for a mount takes the volume's whole mode, its setgid
// and sticky bits too, as the kubelet makes it (an fsGroup emptyDir on
// tmpfs is dgtrwxrwxrwx, and so is its new subPath).
func TestSubPathDirTakesTheVolumesWholeMode(t *testing.T) {
	f := newSubPathFixture(t)
	mode := os.ModeSetgid | os.ModeSticky | 0o777
	if err := os.Chmod(f.vol, mode); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.vol, "new")
	if err := makeSubPathDir(newSubpather(), "new", f.vol, dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode() &^ os.ModeDir; got != mode {
		t.Errorf("subPath directory mode %v, want the volume's %v", got, mode)
	}
}

// A memory emptyDir is a tmpfs with tmpfs' own 1777 root, as the kubelet
// mounts it, and with a fsGroup also setgid to that group: a pod's
// subPath directories then take both bits.
func TestMemoryEmptyDirIsAStickyTmpfs(t *testing.T) {
	f := newSubPathFixture(t)
	dir := filepath.Join(t.TempDir(), "mem")
	fsGroup := int64(123)
	if err := f.m.emptyDirVolume(dir, &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}, &fsGroup); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	if fs.Type != tmpfsMagic {
		t.Errorf("filesystem type %#x, want tmpfs", fs.Type)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o777; st.Mode() != want {
		t.Errorf("memory emptyDir mode %v, want %v", st.Mode(), want)
	}
	if gid := st.Sys().(*syscall.Stat_t).Gid; gid != uint32(fsGroup) {
		t.Errorf("memory emptyDir group %d, want the fsGroup %d", gid, fsGroup)
	}
}
