// Package podcgrouptest has an in-memory podcgroup.OS for tests.
package podcgrouptest

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// FakeOS is cgroup filesystems in memory: directories, some of them
// holding processes. As the kernel, rmdir refuses a cgroup with processes
// or child cgroups (EBUSY).
type FakeOS struct {
	mu          sync.Mutex
	hierarchies []string
	dirs        map[string]bool // path -> holds processes
	removed     []string        // in the order rmdir removed them
	readOnly    bool
}

// New returns a FakeOS with these hierarchies mounted, all empty.
func New(hierarchies ...string) *FakeOS {
	f := &FakeOS{hierarchies: hierarchies, dirs: map[string]bool{}}
	for _, h := range hierarchies {
		f.dirs[h] = false
	}
	return f
}

// Mkdir creates dir and its parents; busy says dir holds processes.
func (f *FakeOS) Mkdir(dir string, busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p := dir; p != "/" && p != "."; p = path.Dir(p) {
		if _, ok := f.dirs[p]; !ok {
			f.dirs[p] = false
		}
	}
	f.dirs[dir] = busy
}

// SetBusy says whether dir holds processes.
func (f *FakeOS) SetBusy(dir string, busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirs[dir] = busy
}

// SetReadOnly makes every rmdir fail with EROFS, as for an agent without
// write access to the cgroup filesystems.
func (f *FakeOS) SetReadOnly(ro bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readOnly = ro
}

// Exists reports whether dir is there.
func (f *FakeOS) Exists(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.dirs[dir]
	return ok
}

// Removed lists the directories rmdir removed, in order.
func (f *FakeOS) Removed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}

// Under lists the directories below root, sorted.
func (f *FakeOS) Under(root string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.dirs {
		if strings.HasPrefix(p, root+"/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Hierarchies returns the mounted hierarchies.
func (f *FakeOS) Hierarchies() ([]string, error) { return slices.Clone(f.hierarchies), nil }

// SubDirs lists dir's child directories.
func (f *FakeOS) SubDirs(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.dirs[dir]; !ok {
		return nil, &os.PathError{Op: "open", Path: dir, Err: syscall.ENOENT}
	}
	return f.children(dir), nil
}

func (f *FakeOS) children(dir string) []string {
	var out []string
	for p := range f.dirs {
		if p != dir && path.Dir(p) == dir {
			out = append(out, path.Base(p))
		}
	}
	slices.Sort(out)
	return out
}

// Rmdir removes dir as the kernel removes a cgroup.
func (f *FakeOS) Rmdir(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	busy, ok := f.dirs[dir]
	switch {
	case !ok:
		return &os.PathError{Op: "rmdir", Path: dir, Err: syscall.ENOENT}
	case f.readOnly:
		return &os.PathError{Op: "rmdir", Path: dir, Err: syscall.EROFS}
	case busy || len(f.children(dir)) > 0:
		return &os.PathError{Op: "rmdir", Path: dir, Err: syscall.EBUSY}
	}
	delete(f.dirs, dir)
	f.removed = append(f.removed, dir)
	return nil
}

// HostPodDirs lists the cgroup directories of pod uid on this machine,
// wherever the kubelet's cgroupfs layout puts them: under /kubepods or a
// QoS class's parent, in any v1 hierarchy or the v2 root. It does not use
// the podcgroup package, so tests check the package's work independently.
func HostPodDirs(t testing.TB, uid string) []string {
	t.Helper()
	var out []string
	for _, pattern := range []string{
		"/sys/fs/cgroup/*/kubepods/pod", "/sys/fs/cgroup/*/kubepods/*/pod",
		"/sys/fs/cgroup/kubepods/pod", "/sys/fs/cgroup/kubepods/*/pod",
	} {
		matches, err := filepath.Glob(pattern + uid)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, matches...)
	}
	return out
}
