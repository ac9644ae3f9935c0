package gc

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestPolicyValidate(t *testing.T) {
	if err := DefaultPolicy.Validate(); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Policy)
		want   string
	}{
		{"no dead instance kept", func(p *Policy) { p.MaxDeadPerContainer = 0 }, "keep at least 1"},
		{"high over 100", func(p *Policy) { p.HighPercent = 101 }, "high threshold 101%"},
		{"negative low", func(p *Policy) { p.LowPercent = -1 }, "low threshold -1%"},
		{"low above high", func(p *Policy) { p.LowPercent, p.HighPercent = 90, 85 }, "above the high threshold"},
		{"zero period", func(p *Policy) { p.ContainerPeriod = 0 }, "periods must be positive"},
		{"negative cgroup period", func(p *Policy) { p.CgroupPeriod = -time.Second }, "periods must be positive"},
		{"negative image age", func(p *Policy) { p.MinImageAge = -time.Second }, "must not be negative"},
	} {
		p := DefaultPolicy
		tc.change(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
		if _, err := New(Config{Policy: p}); err == nil {
			t.Errorf("%s: New accepted the policy", tc.name)
		}
	}
}

// TestCRIFsUsageReadsTheRuntimesFilesystem asks a real runtime where its
// images live and checks the figures are that filesystem's.
func TestCRIFsUsageReadsTheRuntimesFilesystem(t *testing.T) {
	onEachRuntime(t, testCRIFsUsageReadsTheRuntimesFilesystem)
}

func testCRIFsUsageReadsTheRuntimesFilesystem(t *testing.T, n *node) {
	got, err := NewCRIFsUsage(n.is()).ImageFs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Both test runtimes keep their images under the temporary directory.
	var st unix.Statfs_t
	if err := unix.Statfs(os.TempDir(), &st); err != nil {
		t.Fatal(err)
	}
	if want := st.Blocks * uint64(st.Bsize); got.CapacityBytes != want {
		t.Errorf("capacity %d, want %d (statfs of %s)", got.CapacityBytes, want, os.TempDir())
	}
	if got.AvailableBytes == 0 || got.AvailableBytes > got.CapacityBytes {
		t.Errorf("available %d of %d", got.AvailableBytes, got.CapacityBytes)
	}
}
