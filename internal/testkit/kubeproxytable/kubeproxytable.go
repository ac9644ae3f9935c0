// Package kubeproxytable lets a test own the host's kube-proxy nftables
// tables: kube-proxy's proxier writes fixed table names ("kube-proxy" in the
// ip and ip6 families), so two tests running it in the same network
// namespace, even from different test binaries, would overwrite each
// other's rules.
package kubeproxytable

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/proxy/nftables"

	"github.com/berth/berth/internal/testkit/wait"
)

// lockPath is shared by every test binary on the host.
const lockPath = "/run/berth-test-kube-proxy-table.lock"

// Own waits for the host-wide lock on the kube-proxy tables, removes any
// left over, and when the test ends removes them again and releases the
// lock. Cleanups run last-in first-out: call it before starting anything
// that runs the proxier, so the proxier stops first.
func Own(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("kube-proxy table lock: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	// Another test binary may hold it for a whole test.
	wait.UntilTrue(t, 10*time.Minute, "the host-wide kube-proxy table lock "+lockPath, func(context.Context) (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return err == nil, err
	})
	nftables.CleanupLeftovers(context.Background())
	t.Cleanup(func() {
		if nftables.CleanupLeftovers(context.Background()) {
			t.Errorf("removing the kube-proxy nftables tables failed")
		}
	})
}

// List returns `nft list table ip kube-proxy`, or "" when it does not exist.
func List(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "nft", "list", "table", "ip", "kube-proxy").CombinedOutput()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
