package hostcheck

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"
	"time"
)

// fakeHost is an in-memory machine: env vars, a uid, a PATH and files.
type fakeHost struct {
	env   map[string]string
	uid   int
	wd    string
	path  map[string]string // command -> resolved path
	files map[string]fakeFile
}

type fakeFile struct {
	mode fs.FileMode
	data []byte
}

func (h *fakeHost) Getenv(k string) string { return h.env[k] }
func (h *fakeHost) Geteuid() int           { return h.uid }
func (h *fakeHost) Getwd() (string, error) { return h.wd, nil }
func (h *fakeHost) LookPath(f string) (string, error) {
	if p, ok := h.path[f]; ok {
		return p, nil
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", f)
}
func (h *fakeHost) Stat(name string) (fs.FileInfo, error) {
	f, ok := h.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fakeInfo{name: path.Base(name), f: f}, nil
}
func (h *fakeHost) ReadFile(name string) ([]byte, error) {
	f, ok := h.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return f.data, nil
}
func (h *fakeHost) Glob(pattern string) ([]string, error) {
	var out []string
	for name := range h.files {
		if ok, _ := path.Match(pattern, name); ok {
			out = append(out, name)
		}
	}
	return out, nil
}

type fakeInfo struct {
	name string
	f    fakeFile
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return int64(len(i.f.data)) }
func (i fakeInfo) Mode() fs.FileMode  { return i.f.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.f.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

// recorder captures how require ended the test.
type recorder struct {
	fatal, skip string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...) }
func (r *recorder) Skipf(f string, args ...any)  { r.skip = fmt.Sprintf(f, args...) }

func newFakeHost() *fakeHost {
	return &fakeHost{
		env:   map[string]string{},
		wd:    "/repo/internal/pkg",
		path:  map[string]string{},
		files: map[string]fakeFile{"/repo/go.mod": {mode: 0o644}},
	}
}

func exe() fakeFile { return fakeFile{mode: 0o755} }

func TestRequireSkipsWhenMissingAndNotStrict(t *testing.T) {
	h := newFakeHost()
	h.uid = 1000
	var r recorder
	require(&r, h, Root)
	if r.fatal != "" {
		t.Fatalf("not strict: want skip, got fatal %q", r.fatal)
	}
	if !strings.Contains(r.skip, "root") || !strings.Contains(r.skip, "uid 1000") {
		t.Fatalf("skip message %q does not name the missing requirement", r.skip)
	}
}

func TestRequireFailsWhenMissingAndStrict(t *testing.T) {
	h := newFakeHost()
	h.env[StrictEnv] = "1"
	var r recorder
	require(&r, h, Runc, CNIPlugins)
	if r.skip != "" {
		t.Fatalf("strict: want fatal, got skip %q", r.skip)
	}
	for _, want := range []string{"runc", "apt-get install runc", "containernetworking-plugins", "bridge, host-local, loopback, portmap"} {
		if !strings.Contains(r.fatal, want) {
			t.Errorf("fatal message %q lacks %q", r.fatal, want)
		}
	}
}

func TestRequirePassesWhenAllPresent(t *testing.T) {
	h := newFakeHost()
	h.env[StrictEnv] = "1"
	h.path["runc"] = "/usr/bin/runc"
	h.path["containerd"] = "/usr/bin/containerd"
	for _, p := range cniPluginNames {
		h.files["/usr/lib/cni/"+p] = exe()
	}
	h.files["/proc/filesystems"] = fakeFile{mode: 0o444, data: []byte("nodev\tproc\n\text4\nnodev\toverlay\n")}
	var r recorder
	require(&r, h, Root, Runc, CNIPlugins, Containerd, Overlayfs)
	if r.fatal != "" || r.skip != "" {
		t.Fatalf("all present: got fatal %q skip %q", r.fatal, r.skip)
	}
}

func TestRuncFallsBackToUsrSbin(t *testing.T) {
	h := newFakeHost()
	if err := Runc.check(h); err == nil {
		t.Fatal("no runc anywhere: check passed")
	}
	h.files["/usr/sbin/runc"] = fakeFile{mode: 0o644}
	if err := Runc.check(h); err == nil {
		t.Fatal("non-executable /usr/sbin/runc: check passed")
	}
	h.files["/usr/sbin/runc"] = exe()
	if p, err := runcPath(h); err != nil || p != "/usr/sbin/runc" {
		t.Fatalf("runcPath = %q, %v; want /usr/sbin/runc", p, err)
	}
}

func TestCNIPluginsHonoursBinDirEnv(t *testing.T) {
	h := newFakeHost()
	h.env["BERTH_CNI_BIN_DIR"] = "/opt/cni/bin"
	for _, p := range cniPluginNames {
		h.files["/opt/cni/bin/"+p] = exe()
	}
	if err := CNIPlugins.check(h); err != nil {
		t.Fatalf("plugins in $BERTH_CNI_BIN_DIR: %v", err)
	}
	delete(h.files, "/opt/cni/bin/portmap")
	err := CNIPlugins.check(h)
	if err == nil || !strings.Contains(err.Error(), "portmap") || strings.Contains(err.Error(), "bridge") {
		t.Fatalf("missing portmap: got %v", err)
	}
}

func TestToolsDirDefaultsToRepoOutput(t *testing.T) {
	h := newFakeHost()
	if err := Crictl.check(h); err == nil {
		t.Fatal("no crictl: check passed")
	}
	h.files["/repo/_output/tools/crictl"] = exe()
	if err := Crictl.check(h); err != nil {
		t.Fatalf("crictl in /repo/_output/tools: %v", err)
	}
	h.env["BERTH_TOOLS_DIR"] = "/elsewhere"
	if err := Crictl.check(h); err == nil {
		t.Fatal("BERTH_TOOLS_DIR ignored: found crictl in the default dir")
	}
}

func TestOverlayfsNeedsExactFilesystemName(t *testing.T) {
	h := newFakeHost()
	h.files["/proc/filesystems"] = fakeFile{data: []byte("nodev\tproc\nnodev\toverlayish\n")}
	if err := Overlayfs.check(h); err == nil {
		t.Fatal("overlayish accepted as overlay")
	}
}

func TestBusyboxStaticRejectsDynamicAndNonELF(t *testing.T) {
	h := newFakeHost()
	h.files[BusyboxPath] = fakeFile{mode: 0o755, data: []byte("#!/bin/sh\n")}
	if err := BusyboxStatic.check(h); err == nil || !strings.Contains(err.Error(), "ELF") {
		t.Fatalf("script as busybox: got %v", err)
	}
	// Debian's /bin/sh (dash) is a dynamically linked ELF executable.
	dash, err := os.ReadFile("/bin/dash")
	if err != nil {
		t.Fatalf("read a known dynamic executable: %v", err)
	}
	h.files[BusyboxPath] = fakeFile{mode: 0o755, data: dash}
	if err := BusyboxStatic.check(h); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("dynamic ELF as busybox: got %v", err)
	}
}

func TestBusyboxAshRejectsDynamic(t *testing.T) {
	h := newFakeHost()
	h.env["BERTH_TOOLS_DIR"] = "/tools"
	if err := BusyboxAsh.check(h); err == nil {
		t.Fatal("no busybox-ash: accepted")
	}
	dash, err := os.ReadFile("/bin/dash")
	if err != nil {
		t.Fatalf("read a known dynamic executable: %v", err)
	}
	h.files["/tools/busybox-ash"] = fakeFile{mode: 0o755, data: dash}
	if err := BusyboxAsh.check(h); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("dynamic ELF as busybox-ash: got %v", err)
	}
}

func TestRealBusyboxIsStaticWhenInstalled(t *testing.T) {
	Require(t, BusyboxStatic)
	// Require passed, so the real check must agree on a second call.
	if m := Check(OS(), BusyboxStatic); len(m) != 0 {
		t.Fatalf("Check disagrees with Require: %v", m)
	}
}

func TestRepoRootFindsThisModule(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(root + "/go.mod")
	if err != nil || !strings.Contains(string(data), "module github.com/berth/berth") {
		t.Fatalf("RepoRoot %q: go.mod not this module (%v)", root, err)
	}
}

func TestGccNeedsStaticLibc(t *testing.T) {
	h := newFakeHost()
	h.path["gcc"] = "/usr/bin/gcc"
	if err := Gcc.check(h); err == nil || !strings.Contains(err.Error(), "libc.a") {
		t.Fatalf("gcc without libc.a: got %v", err)
	}
	h.files["/usr/lib/x86_64-linux-gnu/libc.a"] = fakeFile{mode: 0o644}
	if err := Gcc.check(h); err != nil {
		t.Fatalf("gcc with libc.a: %v", err)
	}
}
