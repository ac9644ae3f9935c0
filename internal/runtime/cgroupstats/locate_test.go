package cgroupstats

import (
	"path/filepath"
	"testing"
)

// TestLocateUndoesMountinfoEscapes: mountinfo writes a space in a mount
// point or root as \040; the cgroup directories are the unescaped paths.
func TestLocateUndoesMountinfoEscapes(t *testing.T) {
	h := newFakeHost(t, []string{
		`32 25 0:29 /nested\040runtime ROOT/cg\040v1/memory rw,relatime - cgroup cgroup rw,memory`,
		`35 25 0:32 / ROOT/cg\040v2 rw,nosuid - cgroup2 cgroup2 rw`,
	}, "4:memory:/nested runtime/berth/c1\n0::/berth/c1\n")
	got, err := h.r.locate(42)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(h.root, "cg v1/memory/berth/c1"); got.v1["memory"] != want {
		t.Errorf("memory cgroup = %q, want %q", got.v1["memory"], want)
	}
	if want := filepath.Join(h.root, "cg v2/berth/c1"); got.unified != want {
		t.Errorf("unified cgroup = %q, want %q", got.unified, want)
	}
}
